package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"

	"k8s.io/apimachinery/pkg/version"

	"github.com/berth-dev/berth/api"
)

// versionInfo is /version: the Kubernetes version berth serves, with
// berth's own version as build metadata (api.ServedVersion). GitCommit is
// berth's commit.
func versionInfo(v VersionInfo) version.Info {
	major, minor, _ := strings.Cut(api.KubernetesVersion, ".")
	minor, _, _ = strings.Cut(minor, ".")
	goVersion := v.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	return version.Info{
		Major:      major,
		Minor:      minor,
		GitVersion: api.ServedVersion(v.Version),
		GitCommit:  v.Commit,
		GoVersion:  goVersion,
		Compiler:   runtime.Compiler,
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
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
