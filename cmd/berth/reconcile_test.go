package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"

	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/source"
)

// startSourcedControlPlane runs a real control plane (memory store) with
// sources, and returns its admin kubeconfig.
func startSourcedControlPlane(t *testing.T, sources ...string) string {
	t.Helper()
	var specs []source.Spec
	for _, s := range sources {
		spec, err := source.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	kubeconfig := cptest.Start(t, controlplane.Config{Sources: specs}).Credentials().Paths.AdminKubeconfig
	waitReady(t, func() bool {
		return runBerth(t, "", "get", "ns", "default", "--kubeconfig", kubeconfig).code == exitOK
	})
	return kubeconfig
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func configMapManifest(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  key: %q\n", name, value)
}

func TestReconcileSource(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), configMapManifest("a", "1"))
	writeFile(t, filepath.Join(dir, "b.yaml"), configMapManifest("b", "1")+"---\n"+configMapManifest("c", "1"))
	kubeconfig := startSourcedControlPlane(t, "name=site,"+dir)
	berth := func(args ...string) result {
		t.Helper()
		return runBerth(t, "", append(args, "--kubeconfig", kubeconfig)...)
	}

	r := berth("reconcile", "source", "site")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "source/site synced: revision sha256:") || !strings.Contains(r.stdout, "\nApplied revision sha256:") {
		t.Fatalf("reconcile: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	writeFile(t, filepath.Join(dir, "a.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndatta: {}\n")
	r = berth("reconcile", "source", "site")
	if r.code != exitFailure || !strings.Contains(r.stderr, "source/site not synced (InvalidRevision)") || !strings.Contains(r.stderr, `a.yaml:doc 0 (line 5): datta: unknown field "datta"`) {
		t.Errorf("reconcile broken: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r := berth("get", "cm", "a"); r.code != exitOK {
		t.Errorf("a is gone after a rejected revision: %s", r.stderr)
	}
	// The syncs are events on the Source, which describe shows.
	r = berth("describe", "source", "site")
	for _, want := range []string{"Normal   ReconciliationSucceeded", "Applied revision sha256:", "Warning  ValidationFailed", `datta: unknown field "datta"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("describe source does not show %q:\n%s", want, r.stdout)
		}
	}

	// Only a.yaml left, fixed: 2 of 3 objects go, which the guard holds.
	writeFile(t, filepath.Join(dir, "a.yaml"), configMapManifest("a", "2"))
	os.Remove(filepath.Join(dir, "b.yaml"))
	r = berth("reconcile", "source", "site")
	if r.code != exitFailure || !strings.Contains(r.stderr, "(PruneGuard)") || !strings.Contains(r.stderr, "would prune 2 of the 3 objects") {
		t.Errorf("reconcile guarded: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = berth("reconcile", "source", "site", "--allow-prune")
	if r.code != exitOK || !strings.Contains(r.stdout, "1 updated, 2 pruned") {
		t.Errorf("reconcile --allow-prune: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r := berth("get", "cm", "b"); r.code != exitFailure {
		t.Errorf("b not pruned: %s", r.stdout)
	}

	r = berth("reconcile", "source", "nope")
	if r.code != exitFailure || !strings.Contains(r.stderr, `sources.berth.dev "nope" not found`) {
		t.Errorf("reconcile unknown: exit %d\nstderr: %s", r.code, r.stderr)
	}
	if r := berth("reconcile", "source"); r.code != exitUsage {
		t.Errorf("no name: exit %d", r.code)
	}
}

// laterSync is the fixture Source "site" as a sync for a request after
// fixtureNow left it.
func laterSync() *api.Source {
	src := cluster().objects["sources//site"].(*api.Source).DeepCopy()
	src.Status.LastHandledReconcileAt = fixtureNow.Add(time.Millisecond).Format(time.RFC3339Nano)
	src.Status.LastAttemptedRevision = "sha256:1f2e"
	apimeta.SetStatusCondition(&src.Status.Conditions, metav1.Condition{Type: api.SourceReady, Status: metav1.ConditionTrue,
		Reason: api.ReasonSucceeded, Message: "applied revision sha256:1f2e"})
	return src
}

// TestReconcileAnsweredByLaterRequest checks that a sync the server ran
// for a later request answers this one too: the server merges requests
// that come while a sync runs and answers only the newest.
func TestReconcileAnsweredByLaterRequest(t *testing.T) {
	f := cluster()
	f.watches = [][]watchEvent{{{Type: watchModified, Object: laterSync()}}}
	useFakeAPI(t, f)
	r := runBerth(t, "", "reconcile", "source", "site", "--timeout", "10s")
	if r.code != exitOK || r.stdout != "source/site synced: revision sha256:1f2e\napplied revision sha256:1f2e\n" {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// TestReconcileRetriesConflict checks that a conflict writing the request
// is read again and written again, not reported.
func TestReconcileRetriesConflict(t *testing.T) {
	waits := recordConflictWaits(t)
	f := cluster()
	f.watches = [][]watchEvent{{{Type: watchModified, Object: laterSync()}}}
	f.failOnce["patch sources /site"] = apierrors.NewConflict(api.KindOf(&api.Source{}).GroupResource(), "site", errors.New("the object has been modified"))
	useFakeAPI(t, f)
	r := runBerth(t, "", "reconcile", "source", "site", "--timeout", "10s")
	if r.code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	want := []string{"patch sources /site", "patch sources /site"}
	if got := f.writes(); !slices.Equal(got, want) {
		t.Errorf("writes %q, want %q", got, want)
	}
	if len(*waits) != 1 || (*waits)[0] <= 0 {
		t.Errorf("waited %v between the attempts, want one back-off", *waits)
	}
}

// TestReconcileGivesUpOnConflict checks that a request that always loses
// to another writer is written conflictAttempts times with a growing
// back-off in between, then reported with the server's Conflict, rather
// than retried at once until the timeout.
func TestReconcileGivesUpOnConflict(t *testing.T) {
	waits := recordConflictWaits(t)
	f := cluster()
	f.fail["patch sources /site"] = apierrors.NewConflict(api.KindOf(&api.Source{}).GroupResource(), "site", errors.New("the object has been modified"))
	useFakeAPI(t, f)
	r := runBerth(t, "", "reconcile", "source", "site", "--timeout", "20s")
	if r.code != exitFailure || !strings.Contains(r.stderr, "Error from server (Conflict)") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if got := f.writes(); len(got) != conflictAttempts {
		t.Errorf("writes %q, want %d patches", got, conflictAttempts)
	}
	if len(*waits) != conflictAttempts-1 {
		t.Fatalf("waited %v, want %d back-offs", *waits, conflictAttempts-1)
	}
	for i, w := range *waits {
		if w <= 0 || i > 0 && w <= (*waits)[i-1] {
			t.Errorf("back-offs %v do not grow", *waits)
			break
		}
	}
}

// recordConflictWaits puts a timer under retryLostRace that fires at once
// and records the waits it was asked for.
func recordConflictWaits(t *testing.T) *[]time.Duration {
	t.Helper()
	waits := &[]time.Duration{}
	conflictTimer = func() backoff.Timer { return &firingTimer{waits: waits, c: make(chan time.Time, 1)} }
	t.Cleanup(func() { conflictTimer = nil })
	return waits
}

// firingTimer is a back-off timer that fires as soon as it starts.
type firingTimer struct {
	waits *[]time.Duration
	c     chan time.Time
}

func (f *firingTimer) Start(d time.Duration) {
	*f.waits = append(*f.waits, d)
	f.c <- time.Time{}
}
func (f *firingTimer) Stop()               {}
func (f *firingTimer) C() <-chan time.Time { return f.c }

// TestHandledSince compares handled requests as times, not strings.
func TestHandledSince(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 500, time.UTC)
	tests := []struct {
		handled string
		want    bool
	}{
		{"", false},
		{"2026-03-01T12:00:00.0000005Z", true},
		{"2026-03-01T12:00:00.000001Z", true},        // later, fewer digits
		{"2026-03-01T13:00:00.0000001+01:00", false}, // earlier, in another zone
		{"2026-03-01T11:59:59.9Z", false},
		{"by hand", false},
	}
	for _, tt := range tests {
		src := &api.Source{Status: api.SourceStatus{LastHandledReconcileAt: tt.handled}}
		if got := handledSince(src, at); got != tt.want {
			t.Errorf("handledSince(%q) = %v, want %v", tt.handled, got, tt.want)
		}
	}
}

// TestReconcileConcurrently runs several `berth reconcile source` at once
// against a real control plane: the server merges their requests, and
// every one of them must still see its sync done.
func TestReconcileConcurrently(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), configMapManifest("a", "1"))
	kubeconfig := startSourcedControlPlane(t, "name=site,"+dir)
	const n = 4
	results := make(chan result, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			results <- runBerth(t, "", "reconcile", "source", "site", "--timeout", "30s", "--kubeconfig", kubeconfig)
		})
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r.code != exitOK {
			t.Errorf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
	}
}
