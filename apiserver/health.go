package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/version"
)

// KubernetesVersion is the Kubernetes release whose API berth serves: that
// of the k8s.io/api it is built with (a test keeps the two together).
const KubernetesVersion = "1.37.2"

// versionInfo is /version: the Kubernetes version berth serves, with
// berth's own version as build metadata (v1.37.2+berth.0.5.0), as k3s
// reports v1.30.2+k3s1. Clients read /version as a Kubernetes server's:
// kubectl checks its version skew against major and minor, and Helm
// checks a chart's kubeVersion constraint against gitVersion, which a
// server that answered v0.5.0 failed. GitCommit is berth's commit.
func versionInfo(v VersionInfo) version.Info {
	major, minor, _ := strings.Cut(KubernetesVersion, ".")
	minor, _, _ = strings.Cut(minor, ".")
	goVersion := v.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	return version.Info{
		Major:      major,
		Minor:      minor,
		GitVersion: gitVersion(v.Version),
		GitCommit:  v.Commit,
		GoVersion:  goVersion,
		Compiler:   runtime.Compiler,
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// gitVersion is KubernetesVersion after a "v", with berth's version v as
// build metadata: "berth." and v without its "v", every character a
// semantic version does not allow there made a "-" ("unknown" for none).
func gitVersion(v string) string {
	meta := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, strings.TrimPrefix(v, "v"))
	// Dot-separated identifiers may not be empty.
	parts := strings.Split(meta, ".")
	parts = slices.DeleteFunc(parts, func(p string) bool { return p == "" })
	if len(parts) == 0 {
		parts = []string{"unknown"}
	}
	return "v" + KubernetesVersion + "+berth." + strings.Join(parts, ".")
}

func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		WriteError(w, methodNotAllowed(nil, r.Method))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(versionInfo(s.cfg.Version))
}

// serveLivez answers 200 while the process serves, as Kubernetes' /livez.
func (s *Server) serveLivez(w http.ResponseWriter, r *http.Request) {
	writeChecks(w, r, "livez", []checkResult{{name: "ping"}})
}

// serveReadyz answers 200 once every ready check passes, and 500 once
// Shutdown has begun, so load balancers stop sending before watches end.
func (s *Server) serveReadyz(w http.ResponseWriter, r *http.Request) {
	results := []checkResult{{name: "ping"}}
	if s.shuttingDown() {
		results = append(results, checkResult{name: "shutdown", err: fmt.Errorf("the server is shutting down")})
	}
	for _, c := range s.cfg.ReadyChecks {
		res := checkResult{name: c.Name}
		if c.Check != nil {
			res.err = c.Check()
		}
		results = append(results, res)
	}
	writeChecks(w, r, "readyz", results)
}

type checkResult struct {
	name string
	err  error
}

// writeChecks answers in Kubernetes' health format: "ok", or with
// ?verbose one "[+]name ok" / "[-]name failed: reason" line per check.
func writeChecks(w http.ResponseWriter, r *http.Request, what string, results []checkResult) {
	failed := false
	var b strings.Builder
	for _, res := range results {
		if res.err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", res.name, res.err)
		} else {
			fmt.Fprintf(&b, "[+]%s ok\n", res.name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, verbose := r.URL.Query()["verbose"]
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", b.String(), what)
		return
	}
	if verbose {
		fmt.Fprintf(w, "%s%s check passed\n", b.String(), what)
		return
	}
	fmt.Fprint(w, "ok")
}
