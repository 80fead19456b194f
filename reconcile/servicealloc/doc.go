// Package servicealloc gives Services their virtual IPs from the service
// CIDR and their node ports from the node port range, inside the store
// transaction that writes the Service, as Kubernetes' API server does.
package servicealloc
