package pods

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Where a pod finds the API server, as the kubelet tells it: the
// variables of the `kubernetes` service in the default namespace, which
// every pod gets whatever its enableServiceLinks says. berth has no
// service VIPs (SPEC §4), so the address is the one the agent itself
// reaches the server at, its --server URL; client libraries' in-cluster
// configs (KUBERNETES_SERVICE_HOST and _PORT, the token and ca.crt beside
// it) then work unchanged.
const (
	EnvKubernetesServiceHost = "KUBERNETES_SERVICE_HOST"
	EnvKubernetesServicePort = "KUBERNETES_SERVICE_PORT"
)

// apiServerEnv is the kubelet's variables of the `kubernetes` service
// for server (the agent's --server URL) as KEY=VALUE, in the kubelet's
// order; none for no server (a standalone agent). The service's one port
// is named https, hence KUBERNETES_SERVICE_PORT_HTTPS.
func apiServerEnv(server string) ([]string, error) {
	if server == "" {
		return nil, nil
	}
	// Of several control planes, the first: a pod has one address for
	// the API, as a Kubernetes pod has the kubernetes service's.
	server, _, _ = strings.Cut(server, ",")
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %w", server, err)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return nil, fmt.Errorf("server URL %q: no host", server)
	}
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	addr := "tcp://" + net.JoinHostPort(host, port)
	prefix := "KUBERNETES_PORT_" + port + "_TCP"
	return []string{
		EnvKubernetesServiceHost + "=" + host,
		EnvKubernetesServicePort + "=" + port,
		EnvKubernetesServicePort + "_HTTPS=" + port,
		"KUBERNETES_PORT=" + addr,
		prefix + "=" + addr,
		prefix + "_PROTO=tcp",
		prefix + "_PORT=" + port,
		prefix + "_ADDR=" + host,
	}, nil
}

// splitEnv splits KEY=VALUE at its first "=".
func splitEnv(kv string) (string, string) {
	k, v, _ := strings.Cut(kv, "=")
	return k, v
}
