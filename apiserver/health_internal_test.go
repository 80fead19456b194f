package apiserver

import (
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestGitVersionParses(t *testing.T) {
	for in, want := range map[string]string{
		"0.3.1":         "v0.3.1",
		"v0.3.1":        "v0.3.1",
		"1.2.0-rc.1":    "v1.2.0-rc.1",
		"dev":           "v0.0.0-dev",
		"":              "v0.0.0-unknown",
		"0.3.1-dirty+x": "v0.3.1-dirty+x",
		"my build_7":    "v0.0.0-my-build-7",
		"a..b":          "v0.0.0-unknown",
		"007":           "v0.0.0-unknown",
		"-x":            "v0.0.0--x",
	} {
		got := gitVersion(in)
		if got != want {
			t.Errorf("gitVersion(%q) = %q, want %q", in, got, want)
		}
		if _, err := utilversion.ParseSemantic(got); err != nil {
			t.Errorf("gitVersion(%q) = %q, which kubectl cannot parse: %v", in, got, err)
		}
	}
}
