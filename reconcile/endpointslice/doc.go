// Package endpointslice keeps the EndpointSlices of every Service with a
// selector, as Kubernetes' EndpointSlice controller does: the service's
// endpoints, made of the same Members as its Endpoints, in slices of one
// address type and one set of ports, at most 100 endpoints each.
package endpointslice
