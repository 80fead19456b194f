// Package ingress is berth's built-in Ingress controller: it builds a
// routing table from the Ingress, IngressClass, Service, EndpointSlice
// and Secret objects of the store and serves it as an HTTP and HTTPS
// reverse proxy, swapping in each new table without dropping a
// connection.
package ingress
