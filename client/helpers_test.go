package client_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

const token = "admin-token"

type adminOnly struct{}

func (adminOnly) Authenticate(_ context.Context, tok string) (*auth.Identity, error) {
	if tok == token {
		return &auth.Identity{Name: "admin", Kind: auth.IdentityAdmin}, nil
	}
	return nil, auth.ErrUnauthenticated
}

func (adminOnly) Authorize(context.Context, *auth.Identity, auth.Attributes) error {
	return nil
}

// server is a real API server over a real memory store, on TLS.
type server struct {
	store *store.Store
	api   *apiserver.Server
	ts    *httptest.Server
	caPEM []byte
}

func newServer(t *testing.T, history int, wrap func(http.Handler) http.Handler) *server {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	st, err := store.New(store.Memory{}, store.Options{History: history, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{Store: st, Authenticator: adminOnly{}, Authorizer: adminOnly{}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	s := &server{store: st, api: srv, ts: ts, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ts.Close()
		st.Close()
	})
	if _, err := st.Create(context.Background(), &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *server) client(t *testing.T) *client.Client {
	t.Helper()
	tr, err := client.NewTransport(&client.Config{CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(&client.Config{Server: s.ts.URL, Token: token, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func kind(resource string) *api.Kind {
	k, _ := api.LookupResource(resource)
	return k
}

var (
	cmKind  = kind("configmaps")
	podKind = kind("pods")
)

func configMap(name string) *api.ConfigMap {
	return &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

// eventually polls cond until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, 10*time.Second, what, func() error {
		if !cond() {
			return errors.New("condition not met")
		}
		return nil
	})
}

// TestMain fails the run if a test left a goroutine of berth's behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			var leaked []string
			for g := range strings.SplitSeq(string(buf), "\n\n") {
				if strings.Contains(g, "berth-dev/berth/") && !strings.Contains(g, "testing.(*M).Run") && !strings.Contains(g, ".TestMain(") {
					leaked = append(leaked, g)
				}
			}
			if len(leaked) == 0 {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "goroutines left behind:\n%s\n", strings.Join(leaked, "\n\n"))
				code = 1
				break
			}
			// TestMain has no testing.TB, so testtool.WaitFor cannot poll here.
			time.Sleep(10 * time.Millisecond)
		}
	}
	os.Exit(code)
}
