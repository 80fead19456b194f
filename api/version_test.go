package api

import (
	"os"
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestServedVersionParses(t *testing.T) {
	for in, want := range map[string]string{
		"0.3.1":         "v" + KubernetesVersion + "+berth.0.3.1",
		"v0.3.1":        "v" + KubernetesVersion + "+berth.0.3.1",
		"1.2.0-rc.1":    "v" + KubernetesVersion + "+berth.1.2.0-rc.1",
		"dev":           "v" + KubernetesVersion + "+berth.dev",
		"":              "v" + KubernetesVersion + "+berth.unknown",
		"0.3.1-dirty+x": "v" + KubernetesVersion + "+berth.0.3.1-dirty-x",
		"my build_7":    "v" + KubernetesVersion + "+berth.my-build-7",
		"a..b":          "v" + KubernetesVersion + "+berth.a.b",
		"...":           "v" + KubernetesVersion + "+berth.unknown",
	} {
		got := ServedVersion(in)
		if got != want {
			t.Errorf("ServedVersion(%q) = %q, want %q", in, got, want)
		}
		v, err := utilversion.ParseSemantic(got)
		if err != nil {
			t.Errorf("ServedVersion(%q) = %q, which kubectl cannot parse: %v", in, got, err)
			continue
		}
		// What Helm's kubeVersion constraints and kubectl's skew check see.
		if v.String() != KubernetesVersion && !strings.HasPrefix(v.String(), KubernetesVersion+"+") {
			t.Errorf("ServedVersion(%q) = %q parses as %s", in, got, v)
		}
	}
}

// KubernetesVersion follows the k8s.io/api berth is built with (v0.X.Y
// for Kubernetes 1.X.Y).
func TestKubernetesVersionFollowsTheAPIModule(t *testing.T) {
	data, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "k8s.io/api" {
			if want := "1." + strings.TrimPrefix(f[1], "v0."); want != KubernetesVersion {
				t.Errorf("KubernetesVersion %s, but go.mod has k8s.io/api %s: make it %s", KubernetesVersion, f[1], want)
			}
			return
		}
	}
	t.Fatal("go.mod requires no k8s.io/api")
}
