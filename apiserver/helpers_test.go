package apiserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/reconcile/namespace"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// Tokens of the test authenticator.
const (
	adminToken  = "admin-token"
	readerToken = "reader-token"
)

// testAuth is the tests' authenticator and authorizer: the admin may do
// anything, the reader only read.
type testAuth struct{}

func (testAuth) Authenticate(_ context.Context, token string) (*auth.Identity, error) {
	switch token {
	case adminToken:
		return &auth.Identity{Name: "admin", Kind: auth.IdentityAdmin}, nil
	case readerToken:
		return &auth.Identity{Name: "system:serviceaccount:default:reader", Kind: auth.IdentityServiceAccount, Namespace: "default"}, nil
	}
	return nil, fmt.Errorf("%w: unknown token", auth.ErrUnauthenticated)
}

func (testAuth) Authorize(_ context.Context, id *auth.Identity, a auth.Attributes) error {
	if id.Kind == auth.IdentityAdmin {
		return nil
	}
	switch a.Verb {
	case auth.VerbGet, auth.VerbList, auth.VerbWatch:
		return nil
	}
	return auth.Forbidden(id, a, "the test reader only reads")
}

// env is a real API server over a real memory store, served over TLS with
// HTTP/2, and a real client of it.
type env struct {
	t      testing.TB
	store  *store.Store
	server *apiserver.Server
	ts     *httptest.Server
	client *client.Client
	caPEM  []byte
	signer *auth.Signer
}

// setup is what options change before newEnv starts the server.
type setup struct {
	cfg      apiserver.Config
	backend  store.Backend
	store    store.Options
	wrap     func(http.Handler) http.Handler
	realAuth bool
}

type envOption func(*setup)

func withConfig(f func(*apiserver.Config)) envOption {
	return func(s *setup) { f(&s.cfg) }
}

func withHistory(n int) envOption {
	return func(s *setup) { s.store.History = n }
}

// withBackend keeps the store in b, a durable backend whose commits
// take time, rather than in memory.
func withBackend(b store.Backend) envOption {
	return func(s *setup) { s.backend = b }
}

func withClock(c clock.WithTickerAndDelayedExecution) envOption {
	return func(s *setup) { s.cfg.Clock, s.store.Clock = c, c }
}

// withRealAuth serves with berth's own authenticator and policy (the
// admin token is adminToken), so that the attributes the server hands them
// are tested end to end.
func withRealAuth() envOption {
	return func(s *setup) { s.realAuth = true }
}

// withWrap puts a handler in front of the server's, to hold or cut
// requests.
func withWrap(w func(http.Handler) http.Handler) envOption {
	return func(s *setup) { s.wrap = w }
}

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	su := &setup{
		cfg: apiserver.Config{
			Authenticator: testAuth{},
			Authorizer:    testAuth{},
			Version:       apiserver.VersionInfo{Version: "v0.3.1", Commit: "abc123", GoVersion: runtime.Version()},
			Logger:        quietLogger(),
		},
		store: store.Options{Logger: quietLogger(), Admit: []store.AdmitFunc{namespace.Admit}},
	}
	for _, o := range opts {
		o(su)
	}
	var backend store.Backend = store.Memory{}
	if su.backend != nil {
		backend = su.backend
	}
	st, err := store.New(backend, su.store)
	if err != nil {
		t.Fatal(err)
	}
	su.cfg.Store = st
	var signer *auth.Signer
	if su.realAuth {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if signer, err = auth.NewSigner(key); err != nil {
			t.Fatal(err)
		}
		su.cfg.Authenticator = auth.NewAuthenticator(st, adminToken, signer)
		su.cfg.Authorizer = auth.NewAuthorizer(st)
	}
	srv, err := apiserver.New(su.cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	if su.wrap != nil {
		h = su.wrap(h)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	e := &env{t: t, store: st, server: srv, ts: ts, caPEM: caPEM, signer: signer}
	e.client = e.clientFor(adminToken)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		ts.Close()
		st.Close()
	})
	if !st.Following() {
		// A follower's backend holds what it holds.
		e.mustCreate(&api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	}
	return e
}

// clientFor is a client with another token, on its own transport.
func (e *env) clientFor(token string) *client.Client {
	e.t.Helper()
	tr, err := client.NewTransport(&client.Config{CAData: e.caPEM})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(&client.Config{Server: e.ts.URL, Token: token, Transport: tr})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) mustCreate(obj api.Object) api.Object {
	e.t.Helper()
	out, err := e.client.Create(context.Background(), obj)
	if err != nil {
		e.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	return out
}

// do sends a raw request and returns the status code and body.
func (e *env) do(method, path, token, contentType, accept string, body io.Reader) (int, http.Header, []byte) {
	e.t.Helper()
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	if accept != "" {
		h.Set("Accept", accept)
	}
	return e.doWith(method, path, token, h, body)
}

// doWith sends a raw request with these headers and returns the status
// code and body.
func (e *env) doWith(method, path, token string, h http.Header, body io.Reader) (int, http.Header, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}

// status decodes a Status body and checks its code.
func status(t testing.TB, code int, body []byte, want int) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("answer %d is not a Status: %v: %s", code, err, body)
	}
	if code != want || int(st.Code) != want || st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure {
		t.Fatalf("answer %d, Status %+v; want %d", code, st, want)
	}
	return st
}

// eventually polls cond until it holds or 30s pass: a race build
// serving 16 MiB answers on two loaded cores takes more than 10s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, 30*time.Second, what, func() error {
		if !cond() {
			return errors.New("condition not met")
		}
		return nil
	})
}

func kind(resource string) *api.Kind {
	k, ok := api.LookupResource(resource)
	if !ok {
		panic("no kind " + resource)
	}
	return k
}

var (
	podKind    = kind("pods")
	nodeKind   = kind("nodes")
	cmKind     = kind("configmaps")
	nsKind     = kind("namespaces")
	deployKind = kind("deployments")
	scKind     = kind("storageclasses")
	srcKind    = kind("sources")
	svcKind    = kind("services")
)

func testPod(ns, name, node string, labels map[string]string) *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: api.PodSpec{
			NodeName:   node,
			Containers: []api.Container{{Name: "main", Image: "busybox:1", Command: []string{"sleep", "1000"}}},
		},
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestMain fails the run if a test left a goroutine of berth's behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines left behind:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

func leakedGoroutines() string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, "berth-dev/berth/") && !strings.Contains(g, "testing.(*M).Run") && !strings.Contains(g, "leakedGoroutines") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		// TestMain has no testing.TB, so testtool.WaitFor cannot poll here.
		time.Sleep(10 * time.Millisecond)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

type apiserverConfig = apiserver.Config

type storeTxn = store.Txn
