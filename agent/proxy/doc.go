// Package proxy is the node's service proxy, as kube-proxy's nftables
// mode: it turns Services and their EndpointSlices into an nftables
// table per address family (ip and ip6) that sends a virtual IP's, a
// node port's and a load-balancer address's connections to the ready
// endpoints.
package proxy
