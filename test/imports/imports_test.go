// Package imports_test holds the rooms' import rules (docs/architecture.md)
// as a test: each package of the module may import, of the module's own
// packages, only those of its own room and of the rooms listed for it.
package imports_test

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/berth-dev/berth"

// allowed is, for each room, the other rooms it may import. A room is a
// top-level folder of the module; cmd/berth is the room cmd.
var allowed = map[string][]string{
	"api":      {},
	"testtool": {},
	// internal holds small libraries of berth's own that know nothing of
	// berth (atomicfile); any room may import them.
	"internal": {},
	"store":    {"api"},
	"source":   {"api"},
	"client":   {"api"},
	"table":    {"api"},
	"dns":      {"api", "store"},
	"sched":    {"api", "store"},
	// reconcile/volume fills in the scheduler's volume plugin: an
	// accepted inversion, the scheduler owning the interface.
	"reconcile": {"api", "store", "source", "sched"},
	"apiserver": {"api", "store", "reconcile", "table"},
	"agent":     {"api", "client", "source"},
	"ingress":   {"api", "store", "client"},
	"ui":        {"api", "client"},
	// plan runs the applier, the controllers' reconciles and the
	// scheduler core on a fork of the store.
	"plan": {"api", "store", "reconcile", "sched"},
	"controlplane": {"api", "store", "source", "reconcile", "sched", "dns", "apiserver", "client",
		"ingress", "ui", "plan"},
	// sim runs a control plane and hollow agents in one process.
	"sim": {"api", "store", "client", "agent", "controlplane"},
	// cmd reaches the server side through controlplane; apiserver only
	// for the version record, table for printing.
	"cmd": {"api", "client", "agent", "controlplane", "sim", "table", "apiserver"},
	// test holds the end-to-end tests, which drive everything.
	"test": {"api", "testtool", "store", "source", "client", "table", "dns", "sched", "reconcile", "apiserver",
		"agent", "ingress", "ui", "plan", "controlplane", "sim", "cmd"},
}

// narrower holds, for some packages inside a room, the only packages of
// the module they may import (each with what lies under it): the
// apiserver's parts that Kubernetes keeps in libraries of their own stay
// libraries, which know nothing of the server that calls them.
var narrower = map[string][]string{
	// Who a caller is and what it may do: reads the store and asks RBAC.
	"apiserver/auth":      {"api", "store", "apiserver/rbac"},
	"apiserver/rbac":      {"api", "store"},
	"apiserver/admission": {"api", "store"},
	// PATCH bodies applied to JSON: nothing of ours.
	"apiserver/patch": {},
	// The agent's server for the API server: the runtime's streams and
	// logs, the pods known only through its options' lookups.
	"agent/server": {"api", "agent/runtime"},
	// The pods of the node: the manager and its workers, over the
	// runtime, probes and eviction's types; the API only through the
	// interfaces agent fills in, and never agent itself.
	"agent/pods": {"api", "agent/runtime", "agent/probe", "agent/eviction", "agent/du"},
	// The Node: registration, Lease, status; the machine's capacity.
	"agent/node": {"api", "client", "agent/runtime", "agent/eviction"},
	// Eviction: thresholds, ranking and the loop, over the functions its
	// options give it.
	"agent/eviction": {"api"},
	// The control plane's credentials: files and certificates, and the
	// kubeconfigs that name the client's servers.
	"controlplane/pki": {"api", "client"},
	// The API's requests that only an agent answers: the API server's
	// handlers, the store's pods and nodes, the HPA's usage interface.
	"controlplane/agentproxy": {"api", "store", "apiserver", "reconcile/hpa"},
}

// controllers under reconcile never import one another, as
// Kubernetes' controllers meet only in the API server: what two share is
// a package of its own, listed here, or the runtime in reconcile itself.
var reconcileShared = []string{"reconcile/members", "reconcile/history", "reconcile/event"}

// TestControllersImportNoController fails when a controller package
// under reconcile imports another controller's package.
func TestControllersImportNoController(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of the whole module")
	}
	controllers := 0
	for _, fields := range listImports(t, module+"/reconcile/...") {
		pkg := strings.TrimPrefix(fields[0], module+"/")
		if pkg == "reconcile" || slices.ContainsFunc(reconcileShared, func(dir string) bool { return under(pkg, dir) }) {
			continue
		}
		controllers++
		for _, imp := range fields[1:] {
			to := strings.TrimPrefix(imp, module+"/")
			if to == imp || !under(to, "reconcile") || to == "reconcile" || under(to, pkg) {
				continue
			}
			if !slices.ContainsFunc(reconcileShared, func(dir string) bool { return under(to, dir) }) {
				t.Errorf("%s imports the controller %s: move what they share into a package of its own", pkg, to)
			}
		}
	}
	if controllers < 10 {
		t.Fatalf("go list gave %d controllers; the test reads nothing", controllers)
	}
}

// listImports lists the packages of pattern with their imports (`go
// list`, tests not counted): each is the package's path, then its
// imports.
func listImports(t *testing.T, pattern string) [][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, pattern)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs [][]string
	for line := range strings.Lines(string(out)) {
		if fields := strings.Fields(line); len(fields) > 0 {
			pkgs = append(pkgs, fields)
		}
	}
	return pkgs
}

// under reports whether the package at path rel is dir or inside it.
func under(rel, dir string) bool {
	return rel == dir || strings.HasPrefix(rel, dir+"/")
}

func room(pkg string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	r, _, _ := strings.Cut(rest, "/")
	return r
}

// TestImportRules lists every package of the module with its imports
// (`go list`, tests not counted) and fails on an import its room may not
// make, or on a room the rules do not know.
func TestImportRules(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of the whole module")
	}
	packages := 0
	narrowed := map[string]bool{}
	for _, fields := range listImports(t, module+"/...") {
		pkg, from := fields[0], room(fields[0])
		packages++
		may, known := allowed[from]
		if !known {
			t.Errorf("%s: room %q has no import rules: add it to the table here and to docs/architecture.md", pkg, from)
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		var only []string
		for dir, may := range narrower {
			if under(rel, dir) {
				only, narrowed[dir] = may, true
			}
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if only != nil {
				to := strings.TrimPrefix(imp, module+"/")
				if !slices.ContainsFunc(only, func(dir string) bool { return under(to, dir) }) && !everyones(room(imp)) {
					t.Errorf("%s imports %s: it may import only %v of the module", pkg, imp, only)
				}
			}
			if to := room(imp); to != from && !everyones(to) && !slices.Contains(may, to) {
				t.Errorf("%s imports %s: room %s may import only %v of the others", pkg, imp, from, may)
			}
		}
	}
	for dir := range narrower {
		if !narrowed[dir] {
			t.Errorf("the rules name %s, which holds no package", dir)
		}
	}
	if packages < 20 {
		t.Fatalf("go list gave %d packages; the test reads nothing", packages)
	}
}

// everyones tells whether any room may import room: testtool, which
// helps tests (the helper packages beside them, cptest, critest,
// storetest, use it from any room), and internal, whose libraries know
// nothing of berth.
func everyones(room string) bool { return room == "testtool" || room == "internal" }

// TestRoom names the room of a package.
func TestRoom(t *testing.T) {
	for pkg, want := range map[string]string{
		module + "/api":                     "api",
		module + "/store/informer":          "store",
		module + "/cmd/berth":               "cmd",
		module + "/agent/runtime/exec":      "agent",
		module + "/reconcile/endpointslice": "reconcile",
	} {
		if got := room(pkg); got != want {
			t.Errorf("room(%s) = %s, want %s", pkg, got, want)
		}
	}
}
