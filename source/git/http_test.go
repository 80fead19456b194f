package git

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGitSmartHTTPFetchesOnlyWhenTheRefMoves(t *testing.T) {
	r := newRemote(t)
	c1 := r.commit("main", map[string]string{"a.yaml": configMap("a", "1")})
	s := serveHTTP(t, r)
	h := start(t, "git+"+s.url(r)+"?interval=1m", "")

	if rev := h.receive(); !rev.OK() || rev.ID != c1 || objects(rev) != "a.yaml:a" {
		t.Fatalf("first revision: %s %s %v %v", rev.ID, objects(rev), rev.Errors, rev.Err)
	}
	if s.fetches.Load() != 1 {
		t.Fatalf("%d fetches for the first revision; want 1", s.fetches.Load())
	}

	// Polls of an unchanged remote: a listing each, no fetch, no revision.
	for i := range 3 {
		lists := s.lists.Load()
		if rev, ok := h.poll(interval * 11 / 10); ok {
			t.Fatalf("poll %d of an unchanged remote sent %+v", i, rev)
		}
		if s.lists.Load() != lists+1 {
			t.Fatalf("poll %d listed the remote %d times; want once", i, s.lists.Load()-lists)
		}
	}
	if s.fetches.Load() != 1 {
		t.Fatalf("%d fetches after polls of an unchanged remote; want 1", s.fetches.Load())
	}

	// A trigger with nothing changed: the same revision again, whole,
	// still without a fetch.
	if rev := h.trigger(); rev.ID != c1 || objects(rev) != "a.yaml:a" {
		t.Fatalf("trigger: %s %s", rev.ID, objects(rev))
	}
	if s.fetches.Load() != 1 {
		t.Fatalf("%d fetches after a trigger of an unchanged remote; want 1", s.fetches.Load())
	}

	// A push: one fetch, of what changed only.
	c2 := r.commit("main", map[string]string{"b.yaml": configMap("b", "1")})
	rev, ok := h.poll(interval * 11 / 10)
	if !ok || rev.ID != c2 || objects(rev) != "a.yaml:a b.yaml:b" {
		t.Fatalf("after a push: %v %s %s", ok, rev.ID, objects(rev))
	}
	if s.fetches.Load() != 2 {
		t.Errorf("%d fetches after a push; want 2", s.fetches.Load())
	}
	// The history below the first commit was never fetched.
	if shallow, err := os.ReadFile(filepath.Join(h.cache, "shallow")); err != nil || strings.TrimSpace(string(shallow)) != c1 {
		t.Errorf("the cache is not shallow at the first commit: %q %v", shallow, err)
	}
}

func TestGitSmartHTTPBasicAuth(t *testing.T) {
	r := newRemote(t)
	c1 := r.commit("main", map[string]string{"a.yaml": configMap("a", "1")})
	s := serveHTTP(t, r)
	s.requireAuth("bot", "s3cret")
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// No credentials.
	h := start(t, "git+"+s.url(r), "")
	rev := h.receive()
	if rev.Err == nil || !strings.Contains(rev.Err.Error(), "authentication required") {
		t.Fatalf("without credentials: %+v", rev)
	}
	t.Logf("without credentials: %v", rev.Err)
	h.stop()

	// A wrong token, then the file is rotated: read again at the next try.
	h = start(t, "git+"+s.url(r)+"?username=bot&password-file="+token, "")
	rev = h.receive()
	if rev.Err == nil {
		t.Fatalf("with a wrong token: %+v", rev)
	}
	t.Logf("with a wrong token: %v", rev.Err)
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rev, ok := h.poll(interval)
	if !ok || !rev.OK() || rev.ID != c1 || objects(rev) != "a.yaml:a" {
		t.Fatalf("after the token was fixed: %v %s %v", ok, rev.ID, rev.Err)
	}

	// A token file that disappears is a failed check that says so.
	if err := os.Remove(token); err != nil {
		t.Fatal(err)
	}
	rev = h.trigger()
	if rev.Err == nil || !strings.Contains(rev.Err.Error(), "read password-file") {
		t.Fatalf("without the token file: %+v", rev)
	}
}

func TestGitSmartHTTPUnreachable(t *testing.T) {
	r := newRemote(t)
	r.commit("main", map[string]string{"a.yaml": configMap("a", "1")})
	s := serveHTTP(t, r)
	url := s.url(r)
	s.srv.Close()
	h := start(t, "git+"+url, "")
	rev := h.receive()
	if rev.Err == nil || !strings.Contains(rev.Err.Error(), "list refs of "+url) || !strings.Contains(rev.Err.Error(), "connection refused") {
		t.Fatalf("with the server down: %+v", rev)
	}
	t.Logf("server down: %v", rev.Err)
}
