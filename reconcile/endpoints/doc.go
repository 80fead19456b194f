// Package endpoints keeps one Endpoints object per Service with a selector,
// listing the ready and not-ready addresses of the pods it selects with their
// ports resolved from each service port's targetPort. Which pods those are,
// and how each becomes an address, is reconcile/members', which the
// endpointslice controller shares, so a service's Endpoints and its
// EndpointSlices never disagree.
package endpoints
