package openapi

import "testing"

func TestModelName(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/berth-dev/berth/api.Pod":              "com.github.berth-dev.berth.api.Pod",
		"k8s.io/api/core/v1.Pod":                          "io.k8s.api.core.v1.Pod",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"example.com/a/b/c.T":                             "com.example.a.b.c.T",
	} {
		if got := ModelName(in); got != want {
			t.Errorf("ModelName(%q) = %q, want %q", in, got, want)
		}
	}
}
