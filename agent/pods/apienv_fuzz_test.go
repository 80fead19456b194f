package pods

import (
	"strings"
	"testing"
)

// FuzzAPIServerEnv: whatever --server holds, apiServerEnv never panics,
// names the URL it refuses, and what it accepts is eight KEY=VALUE
// variables a process can be given (no NUL), with a host.
func FuzzAPIServerEnv(f *testing.F) {
	for _, seed := range []string{"https://10.0.0.1:6443", "https://[fd00::1]", "https://cp.example:8443/", "http://h", "https://", "://x", "https://h:port", "https://%zz"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, server string) {
		env, err := apiServerEnv(server)
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), "server URL") {
				t.Fatalf("%q: error %q does not name the server URL", server, err)
			}
			return
		case server == "":
			if env != nil {
				t.Fatalf("no server: %q", env)
			}
			return
		}
		if len(env) != 8 {
			t.Fatalf("%q: %d variables: %q", server, len(env), env)
		}
		for _, kv := range env {
			k, v := splitEnv(kv)
			if !strings.HasPrefix(k, "KUBERNETES_") || strings.ContainsRune(kv, 0) {
				t.Fatalf("%q: variable %q", server, kv)
			}
			if k == EnvKubernetesServiceHost && v == "" {
				t.Fatalf("%q: no host", server)
			}
		}
	})
}
