package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/client"
)

const nodeToken = "node-token"

// holdingAuth is testAuth plus a node, and it holds every request for
// the object named "slow" until released: a request in flight for as long
// as the test wants.
type holdingAuth struct {
	testAuth
	release chan struct{}
	held    atomic.Int64
}

func (h *holdingAuth) Authenticate(ctx context.Context, token string) (*auth.Identity, error) {
	if token == nodeToken {
		return &auth.Identity{Name: "system:node:n1", Kind: auth.IdentityNode, Node: "n1"}, nil
	}
	return h.testAuth.Authenticate(ctx, token)
}

func (h *holdingAuth) Authorize(ctx context.Context, id *auth.Identity, a auth.Attributes) error {
	if a.Name == "slow" {
		h.held.Add(1)
		<-h.release
	}
	return nil
}

// Reads and writes in flight are capped across callers, as
// kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight cap them: 429 with Retry-After beyond.
// Nodes are never turned away by them: users' reads cannot starve their
// heartbeats.
func TestInflightLimits(t *testing.T) {
	auth := &holdingAuth{release: make(chan struct{})}
	e := newEnv(t, withConfig(func(c *apiserver.Config) {
		c.Authenticator, c.Authorizer = auth, auth
		c.MaxRequestsInflight, c.MaxMutatingRequestsInflight = 2, 1
	}))
	if _, err := e.store.Create(context.Background(), configMap("slow")); err != nil {
		t.Fatal(err)
	}
	e.mustCreate(configMap("fast"))
	const cms = "/api/v1/namespaces/default/configmaps"
	var wg sync.WaitGroup
	defer wg.Wait()
	released := sync.OnceFunc(func() { close(auth.release) })
	defer released()
	for range 2 {
		wg.Go(func() { e.do("GET", cms+"/slow", adminToken, "", "", nil) })
	}
	eventually(t, "two reads in flight", func() bool { return auth.held.Load() == 2 })

	code, h, body := e.do("GET", cms+"/fast", readerToken, "", "", nil)
	st := status(t, code, body, http.StatusTooManyRequests)
	if h.Get("Retry-After") != "1" || !strings.Contains(st.Message, "read requests in flight") {
		t.Fatalf("429: Retry-After %q, %q", h.Get("Retry-After"), st.Message)
	}
	// Writes are another class; a node is in none.
	if code, _, body := e.do("POST", cms, adminToken, "application/json", "", strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w1"}}`)); code != http.StatusCreated {
		t.Fatalf("a write while reads are full: %d %s", code, body)
	}
	if code, _, body := e.do("GET", cms+"/fast", nodeToken, "", "", nil); code != http.StatusOK {
		t.Fatalf("a node's read while reads are full: %d %s", code, body)
	}

	// One write in flight fills the writes.
	wg.Go(func() {
		e.do("PUT", cms+"/slow", adminToken, "application/json", "", strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"slow"},"data":{"a":"b"}}`))
	})
	eventually(t, "a write in flight", func() bool { return auth.held.Load() == 3 })
	code, h, body = e.do("POST", cms, adminToken, "application/json", "", strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w2"}}`))
	if st := status(t, code, body, http.StatusTooManyRequests); h.Get("Retry-After") != "1" || !strings.Contains(st.Message, "mutating") {
		t.Fatalf("429 of a write: Retry-After %q, %q", h.Get("Retry-After"), st.Message)
	}
	if code, _, body := e.do("POST", cms, nodeToken, "application/json", "", strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w3"}}`)); code != http.StatusCreated {
		t.Fatalf("a node's write while writes are full: %d %s", code, body)
	}
	// Watches are not counted.
	w, err := e.clientFor(readerToken).Watch(context.Background(), cmKind, "default", client.WatchOptions{})
	if err != nil {
		t.Fatalf("a watch while reads are full: %v", err)
	}
	w.Stop()

	released()
	wg.Wait()
	if code, _, body := e.do("GET", cms+"/fast", readerToken, "", "", nil); code != http.StatusOK {
		t.Fatalf("a read once the others are done: %d %s", code, body)
	}
}
