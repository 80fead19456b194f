// Package members says which pods stand behind a Service and how each
// becomes an endpoint: the Members of a service (Of), the pods it selects,
// the labels and owner of what is kept for it, and the Index that finds
// the services of a changed pod. The endpoints and endpointslice
// controllers both build on it, as Kubernetes' two share endpointutil,
// so a service's Endpoints and its EndpointSlices never disagree.
package members
