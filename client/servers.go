package client

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
)

// ServersExtension names the extension of a kubeconfig's cluster that
// lists the servers of a cluster of several for berth. kubectl takes one
// URL in a cluster's server field (a list there breaks it) and passes
// over extensions it does not know, so the list lives beside that field:
// kubectl goes to the one address (a load balancer's), berth to it and
// then to each server of the list, as Config.Server's list.
//
//	clusters:
//	- name: berth
//	  cluster:
//	    server: https://berth.example.com:6443
//	    extensions:
//	    - name: berth.dev/servers
//	      extension:
//	        servers: [https://10.0.0.5:6443, https://10.0.0.6:6443]
const ServersExtension = "berth.dev/servers"

// ServerList is the value of the ServersExtension.
type ServerList struct {
	Servers []string `json:"servers"`
}

// DecodeServerList reads the ServersExtension's value (JSON) and checks
// each URL as Config.Server's.
func DecodeServerList(raw []byte) ([]string, error) {
	var l ServerList
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("extension %s: %w", ServersExtension, err)
	}
	for _, s := range l.Servers {
		if strings.Contains(s, ",") {
			return nil, fmt.Errorf("extension %s: server %q: one URL an entry", ServersExtension, s)
		}
		if _, err := ParseServers(s); err != nil {
			return nil, fmt.Errorf("extension %s: %w", ServersExtension, err)
		}
	}
	return l.Servers, nil
}

// JoinServers is the Config.Server of first followed by others, each URL
// once, in that order: the client starts with first and moves on down the
// list.
func JoinServers(first string, others []string) string {
	var out []string
	seen := map[string]bool{}
	for _, s := range append(strings.Split(first, ","), others...) {
		s = strings.TrimSpace(s)
		if key := strings.TrimSuffix(s, "/"); s != "" && !seen[key] {
			seen[key] = true
			out = append(out, s)
		}
	}
	return strings.Join(out, ",")
}

// kubeconfigServers are the servers the current context's cluster lists
// in the ServersExtension, none when it has none.
func kubeconfigServers(cc clientcmd.ClientConfig) ([]string, error) {
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, err
	}
	kctx, ok := raw.Contexts[raw.CurrentContext]
	if !ok {
		return nil, nil
	}
	cluster, ok := raw.Clusters[kctx.Cluster]
	if !ok {
		return nil, nil
	}
	ext, ok := cluster.Extensions[ServersExtension]
	if !ok || ext == nil {
		return nil, nil
	}
	u, ok := ext.(*runtime.Unknown)
	if !ok {
		return nil, fmt.Errorf("cluster %q: extension %s is not a list of servers", kctx.Cluster, ServersExtension)
	}
	servers, err := DecodeServerList(u.Raw)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", kctx.Cluster, err)
	}
	return servers, nil
}
