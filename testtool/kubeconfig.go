package testtool

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Kubeconfig is a kubeconfig of one cluster, user and context, as tests
// that run `berth` or kubectl against a server write it.
type Kubeconfig struct {
	// Server is the cluster's server field.
	Server string
	// Servers, when set, are listed in the cluster's berth.dev/servers
	// extension.
	Servers []string
	// CAFile is the cluster's certificate-authority; without it the
	// cluster skips TLS verification.
	CAFile string
	// Token is the user's bearer token.
	Token string
	// Namespace, when set, is the context's.
	Namespace string
}

// WriteKubeconfig writes k to a file of its own and returns its path.
func WriteKubeconfig(t testing.TB, k Kubeconfig) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: %s\n", k.Server)
	if k.CAFile != "" {
		fmt.Fprintf(&b, "    certificate-authority: %s\n", k.CAFile)
	} else {
		b.WriteString("    insecure-skip-tls-verify: true\n")
	}
	if len(k.Servers) > 0 {
		fmt.Fprintf(&b, "    extensions:\n    - name: berth.dev/servers\n      extension:\n        servers: [%s]\n", strings.Join(k.Servers, ", "))
	}
	fmt.Fprintf(&b, "users:\n- name: u\n  user: {token: %s}\ncontexts:\n- name: c\n  context: {cluster: c, user: u", k.Token)
	if k.Namespace != "" {
		fmt.Fprintf(&b, ", namespace: %s", k.Namespace)
	}
	b.WriteString("}\n")
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
