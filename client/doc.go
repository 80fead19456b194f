// Package client is the Go client of berth's API: typed get, list, watch,
// create, update, patch and delete for every kind of the registry, Status
// errors, kubeconfig loading, and an informer that lists, watches and
// lists again after 410 Gone or a broken stream. The CLI, the agents and
// `berth sim` all talk to the control plane through it.
package client
