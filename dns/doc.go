// Package dns serves cluster DNS (SPEC §6): a record table that follows
// the store's Services, Endpoints and Namespaces through a watch and is
// read without locks, a handler that answers from it (miekg/dns for TCP,
// berth's own readers for UDP) and forwards names outside the cluster
// domain, with Prometheus metrics and a health endpoint.
package dns
