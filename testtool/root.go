package testtool

import (
	"os"
	"testing"
)

// NeedRoot skips a test that needs root (network namespaces, routes,
// bridges), or fails it if RequireEnv is "1".
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("root is required (%s=1) to %s", RequireEnv, why)
	}
	t.Skipf("not root: cannot %s", why)
}
