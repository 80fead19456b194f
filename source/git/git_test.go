package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/testtool"
)

const interval = time.Minute

// harness runs a Git source on a fake clock.
type harness struct {
	t     *testing.T
	clk   *clocktesting.FakeClock
	src   *Git
	out   chan source.Revision
	cache string
	stop  func() // stops the source and waits for it; the test's end calls it too
}

func start(t *testing.T, value string, cache string) *harness {
	t.Helper()
	spec, err := source.Parse(value)
	if err != nil {
		t.Fatal(err)
	}
	if cache == "" {
		cache = filepath.Join(t.TempDir(), "cache")
	}
	h := &harness{t: t, clk: clocktesting.NewFakeClock(time.Unix(1000, 0)), out: make(chan source.Revision), cache: cache}
	h.src, err = New(spec, Options{Clock: h.clk, CacheDir: cache, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.src.Run(ctx, h.out) }()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(h.stop)
	return h
}

func (h *harness) receive() source.Revision {
	h.t.Helper()
	select {
	case r := <-h.out:
		return r
	case <-time.After(30 * time.Second):
		h.t.Fatal("no revision within 30s")
		return source.Revision{}
	}
}

// trigger asks for a check and returns its revision: Trigger always sends.
func (h *harness) trigger() source.Revision {
	h.t.Helper()
	h.src.Trigger()
	return h.receive()
}

// poll lets the interval (or a retry's back-off) pass and returns the
// revision the check sent, or false when it sent none.
func (h *harness) poll(step time.Duration) (source.Revision, bool) {
	h.t.Helper()
	h.waitArmed()
	h.clk.Step(step) // fires the timer: no waiter until the check is done
	var r source.Revision
	sent := false
	testtool.WaitFor(h.t, 30*time.Second, "the check to end", func() error {
		if h.clk.Waiters() != 0 {
			return nil
		}
		select {
		case r = <-h.out:
			sent = true
			return nil
		default:
		}
		return errors.New("the timer is not armed again")
	})
	if sent {
		return r, true
	}
	// The timer is armed again before a revision is sent: give the send
	// a moment to show up.
	select {
	case r := <-h.out:
		return r, true
	case <-time.After(200 * time.Millisecond):
		return source.Revision{}, false
	}
}

// waitArmed waits until the source waits on its clock.
func (h *harness) waitArmed() {
	h.t.Helper()
	testtool.WaitFor(h.t, 30*time.Second, "the source to arm a timer", func() error {
		if h.clk.Waiters() == 0 {
			return errors.New("no timer armed")
		}
		return nil
	})
}

func objects(r source.Revision) string {
	var s []string
	for _, d := range r.Objects {
		s = append(s, d.File+":"+d.Object.GetName())
	}
	slices.Sort(s)
	return strings.Join(s, " ")
}

func packs(t *testing.T, cache string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(cache, "objects", "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

func TestGitFileCommitsDeletesAndErrors(t *testing.T) {
	r := newRemote(t)
	c1 := r.commit("main", map[string]string{
		"apps/a.yaml": configMap("a", "1"),
		"apps/b.yaml": configMap("b", "1"),
		"README.md":   "not a manifest",
		".ci/x.yaml":  configMap("hidden", "1"),
	})
	h := start(t, "git+"+r.url(), "")
	first := h.receive()
	if first.Err != nil || first.ID != c1 || objects(first) != "apps/a.yaml:a apps/b.yaml:b" || len(first.Errors) != 0 {
		t.Fatalf("first revision: %s %s %v %v; want %s", first.ID, objects(first), first.Errors, first.Err, c1)
	}

	// A new commit: a changed file, a deleted one.
	c2 := r.commit("main", map[string]string{"apps/a.yaml": configMap("a", "2"), "apps/b.yaml": ""})
	rev, ok := h.poll(interval * 2)
	if !ok || rev.ID != c2 || objects(rev) != "apps/a.yaml:a" {
		t.Fatalf("after a commit deleting b: %v %s %s; want %s", ok, rev.ID, objects(rev), c2)
	}

	// A broken commit: every error named by file, document and field.
	c3 := r.commit("main", map[string]string{
		"apps/a.yaml":   configMap("a", "3") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nspec: {}\n",
		"apps/bad.yaml": "apiVersion: v1\nkind: Pod\nmetadata: [\n",
		"apps/dup.yaml": configMap("a", "4"),
	})
	rev = h.trigger()
	if rev.ID != c3 || rev.Err != nil {
		t.Fatalf("broken commit: %s %v", rev.ID, rev.Err)
	}
	var got []string
	for _, e := range rev.Errors {
		got = append(got, e.Error())
	}
	want := []string{
		`apps/a.yaml:doc 1 (line 12): spec: unknown field "spec"`,
		"apps/bad.yaml:doc 0 (line 3): invalid YAML",
		`apps/dup.yaml:doc 0 (line 4): metadata.name: Duplicate value: "a": ConfigMap/default/a is also defined at apps/a.yaml:doc 0`,
	}
	if len(got) != len(want) {
		t.Fatalf("errors:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d: %s\nwant it to start %s", i, got[i], want[i])
		}
	}

	// Fixed again.
	c4 := r.commit("main", map[string]string{"apps/a.yaml": configMap("a", "5"), "apps/bad.yaml": "", "apps/dup.yaml": ""})
	if rev := h.trigger(); rev.ID != c4 || !rev.OK() {
		t.Fatalf("fixed commit: %s %v %v", rev.ID, rev.Errors, rev.Err)
	}
}

func TestGitForcePush(t *testing.T) {
	r := newRemote(t)
	c1 := r.commit("main", map[string]string{"a.yaml": configMap("a", "1")})
	c2 := r.commit("main", map[string]string{"b.yaml": configMap("b", "1")})
	h := start(t, "git+"+r.url(), "")
	if rev := h.receive(); rev.ID != c2 {
		t.Fatalf("first revision %s; want %s", rev.ID, c2)
	}
	// Back to an older commit, one the shallow cache never fetched.
	r.forcePush("main", c1)
	rev := h.trigger()
	if rev.ID != c1 || objects(rev) != "a.yaml:a" {
		t.Fatalf("after a force-push to the older commit: %s %s; want %s", rev.ID, objects(rev), c1)
	}
	// A rewritten history: a new commit beside the old ones.
	c3 := r.commit("main", map[string]string{"c.yaml": configMap("c", "1")})
	if rev := h.trigger(); rev.ID != c3 || objects(rev) != "a.yaml:a c.yaml:c" {
		t.Fatalf("after the rewrite: %s %s; want %s", rev.ID, objects(rev), c3)
	}
	// Forward again, to a commit the cache already holds: no fetch.
	n := packs(t, h.cache)
	r.forcePush("main", c2)
	if rev := h.trigger(); rev.ID != c2 || objects(rev) != "a.yaml:a b.yaml:b" {
		t.Fatalf("after a force-push to a fetched commit: %s %s; want %s", rev.ID, objects(rev), c2)
	}
	if packs(t, h.cache) != n {
		t.Error("a commit already in the cache was fetched again")
	}
}

func TestGitDeletedRefAndUnreachableRemote(t *testing.T) {
	r := newRemote(t)
	r.commit("main", map[string]string{"a.yaml": configMap("a", "1")})
	c2 := r.commit("feature", map[string]string{"b.yaml": configMap("b", "1")})
	h := start(t, "git+"+r.url()+"?ref=feature", "")
	if rev := h.receive(); rev.ID != c2 {
		t.Fatalf("first revision %s; want %s", rev.ID, c2)
	}

	r.run(r.bare, "branch", "-D", "feature")
	rev, ok := h.poll(interval * 2)
	if !ok || rev.Err == nil || !strings.Contains(rev.Err.Error(), `ref "feature" not found at file://`) || rev.ID != c2 || rev.Objects != nil {
		t.Fatalf("after deleting the branch: %v %+v", ok, rev)
	}
	// Retried after a back-off much shorter than the interval.
	if rev, ok := h.poll(source.RetryInitial * 2); !ok || rev.Err == nil {
		t.Fatalf("the retry: %v %+v", ok, rev)
	}
	r.run(r.bare, "branch", "feature", c2)
	rev, ok = h.poll(source.RetryInitial * 4)
	if !ok || rev.Err != nil || rev.ID != c2 || objects(rev) != "a.yaml:a b.yaml:b" {
		t.Fatalf("after the branch came back: %v %+v", ok, rev)
	}

	// The remote goes away, then comes back.
	moved := r.bare + ".away"
	if err := os.Rename(r.bare, moved); err != nil {
		t.Fatal(err)
	}
	rev = h.trigger()
	if rev.Err == nil || !strings.Contains(rev.Err.Error(), "list refs of file://"+r.bare) || rev.ID != c2 {
		t.Fatalf("with the remote gone: %+v", rev)
	}
	t.Logf("unreachable remote: %v", rev.Err)
	if err := os.Rename(moved, r.bare); err != nil {
		t.Fatal(err)
	}
	rev, ok = h.poll(source.RetryInitial * 2)
	if !ok || rev.Err != nil || rev.ID != c2 {
		t.Fatalf("after the remote came back: %v %+v", ok, rev)
	}
}

func TestGitPathAndTags(t *testing.T) {
	r := newRemote(t)
	c1 := r.commit("main", map[string]string{
		"clusters/prod/a.yaml":    configMap("a", "1"),
		"clusters/staging/b.yaml": configMap("b", "1"),
		"c.yaml":                  configMap("c", "1"),
	})
	r.run(r.work, "tag", "v1")
	r.run(r.work, "tag", "-a", "-m", "release", "v1-annotated")
	r.run(r.work, "push", "--quiet", "origin", "v1", "v1-annotated")
	r.commit("main", map[string]string{"clusters/prod/d.yaml": configMap("d", "1")})

	for _, tag := range []string{"v1", "v1-annotated", "refs/tags/v1"} {
		h := start(t, "git+"+r.url()+"?path=clusters/prod&ref="+tag, "")
		rev := h.receive()
		if !rev.OK() || rev.ID != c1 || objects(rev) != "clusters/prod/a.yaml:a" {
			t.Errorf("ref=%s: %s %s %v %v; want %s", tag, rev.ID, objects(rev), rev.Errors, rev.Err, c1)
		}
	}

	h := start(t, "git+"+r.url()+"?path=clusters/missing", "")
	rev := h.receive()
	if len(rev.Errors) != 1 || rev.Errors[0].File != "clusters/missing" || !strings.Contains(rev.Errors[0].Message, "no folder") {
		t.Errorf("a missing path: %v %v", rev.Errors, rev.Err)
	}
}

func TestGitRefAsSHA(t *testing.T) {
	r := newRemote(t)
	c1 := r.commit("main", map[string]string{"a.yaml": configMap("a", "1")})
	r.commit("main", map[string]string{"b.yaml": configMap("b", "1")})
	r.commit("main", map[string]string{"c.yaml": configMap("c", "1")})

	// Not advertised, and the server does not serve it by SHA: every
	// branch is fetched.
	h := start(t, "git+"+r.url()+"?ref="+c1, "")
	if rev := h.receive(); !rev.OK() || rev.ID != c1 || objects(rev) != "a.yaml:a" {
		t.Fatalf("ref=SHA, full fetch: %s %s %v %v", rev.ID, objects(rev), rev.Errors, rev.Err)
	}
	// A pinned commit never changes: no listing, no fetch.
	n := packs(t, h.cache)
	if rev, ok := h.poll(interval * 2); ok {
		t.Fatalf("an unchanged pinned commit sent %+v", rev)
	}
	if packs(t, h.cache) != n {
		t.Error("a pinned commit was fetched again")
	}

	// A server that serves reachable commits by SHA: fetched directly,
	// one commit deep.
	r.run(r.bare, "config", "uploadpack.allowReachableSHA1InWant", "true")
	h = start(t, "git+"+r.url()+"?ref="+c1, "")
	if rev := h.receive(); !rev.OK() || rev.ID != c1 || objects(rev) != "a.yaml:a" {
		t.Fatalf("ref=SHA, direct: %s %s %v %v", rev.ID, objects(rev), rev.Errors, rev.Err)
	}
	shallow, err := os.ReadFile(filepath.Join(h.cache, "shallow"))
	if err != nil || strings.TrimSpace(string(shallow)) != c1 {
		t.Errorf("the direct fetch is not one commit deep: shallow=%q %v", shallow, err)
	}

	h = start(t, "git+"+r.url()+"?ref=0123456789abcdef0123456789abcdef01234567", "")
	if rev := h.receive(); rev.Err == nil {
		t.Errorf("a commit that does not exist: %+v", rev)
	} else {
		t.Logf("missing commit: %v", rev.Err)
	}
}

func TestGitCacheIsReused(t *testing.T) {
	r := newRemote(t)
	c1 := r.commit("main", map[string]string{"a.yaml": configMap("a", "1")})
	s := serveHTTP(t, r)
	cache := filepath.Join(t.TempDir(), "cache")

	h := start(t, "git+"+s.url(r), cache)
	if rev := h.receive(); rev.ID != c1 {
		t.Fatalf("first run: %s", rev.ID)
	}
	h.stop()
	if s.fetches.Load() == 0 {
		t.Fatal("the first run fetched nothing")
	}

	// A second source on the same cache (a restart): it lists, finds the
	// commit at hand and reads it without a fetch.
	before := s.fetches.Load()
	h2 := start(t, "git+"+s.url(r), cache)
	if rev := h2.receive(); rev.ID != c1 || objects(rev) != "a.yaml:a" {
		t.Fatalf("second run: %s %s", rev.ID, objects(rev))
	}
	if s.fetches.Load() != before {
		t.Errorf("a restart on a warm cache fetched %d times", s.fetches.Load()-before)
	}
}

func TestGitCacheRefusesAForeignFolder(t *testing.T) {
	r := newRemote(t)
	cache := t.TempDir()
	if err := os.WriteFile(filepath.Join(cache, "precious.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, _ := source.Parse("git+" + r.url())
	src, err := New(spec, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	err = src.Run(context.Background(), make(chan source.Revision))
	if err == nil || !strings.Contains(err.Error(), "holds something other than a git repository") {
		t.Fatalf("Run on a foreign folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cache, "precious.txt")); err != nil {
		t.Error("the foreign file is gone")
	}
}

func TestGitRevisionDescribesItsCommit(t *testing.T) {
	r := newRemote(t)
	if err := os.WriteFile(filepath.Join(r.work, "a.yaml"), []byte(configMap("a", "1")), 0o644); err != nil {
		t.Fatal(err)
	}
	r.run(r.work, "add", "a.yaml")
	r.run(r.work, "commit", "--quiet", "-m", "  <b>bold</b> subject  \n\nthe body, not kept", "--date", "2026-03-04T05:06:07Z")
	r.run(r.work, "push", "--quiet", "origin", "HEAD:refs/heads/main")
	h := start(t, "git+"+r.url(), "")
	rev := h.receive()
	c := rev.Commit
	if c == nil || c.Message != "<b>bold</b> subject" || c.Author != "Test <test@example.com>" || !c.Time.Time.Equal(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)) {
		t.Fatalf("commit %+v", c)
	}
}
