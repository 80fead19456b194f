package api

import (
	"slices"
	"strings"
)

// KubernetesVersion is the Kubernetes release whose API berth serves: that
// of the k8s.io/api it is built with (a test keeps the two together).
const KubernetesVersion = "1.37.2"

// ServedVersion is the version berth gives where Kubernetes gives its
// own (the API's /version gitVersion, a node's kubeletVersion):
// KubernetesVersion after a "v", with berth's version v as build metadata,
// "berth." and v without its "v", every character a semantic version does
// not allow there made a "-" ("unknown" for none): v1.37.2+berth.0.5.0,
// as k3s gives v1.30.2+k3s1. Clients read these as a Kubernetes
// server's: kubectl checks its version skew against them, Helm a chart's
// kubeVersion constraint, which a server that answered v0.5.0 failed.
func ServedVersion(v string) string {
	meta := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, strings.TrimPrefix(v, "v"))
	// Dot-separated identifiers may not be empty.
	parts := slices.DeleteFunc(strings.Split(meta, "."), func(p string) bool { return p == "" })
	if len(parts) == 0 {
		parts = []string{"unknown"}
	}
	return "v" + KubernetesVersion + "+berth." + strings.Join(parts, ".")
}
