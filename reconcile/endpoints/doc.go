// Package endpoints keeps one Endpoints object per Service with a selector,
// listing the ready and not-ready addresses of the pods it selects with their
// ports resolved from each service port's targetPort. The Members of a
// service and the ServiceIndex that finds the services of a pod serve the
// endpointslice controller too, so a service's Endpoints and its
// EndpointSlices never disagree.
package endpoints
