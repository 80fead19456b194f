package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// closedURL is an https URL of a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "https://" + addr
}

func TestClientMovesToTheNextServer(t *testing.T) {
	s := newServer(t, 0, nil)
	down := closedURL(t)
	tr, err := client.NewTransport(&client.Config{CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(&client.Config{Server: down + "," + s.ts.URL, Token: token, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Create(ctx, configMap("a")); err != nil {
		t.Fatalf("a create with the first server down: %v", err)
	}
	if c.Server() != s.ts.URL {
		t.Fatalf("the client sends to %s, want the server that answered, %s", c.Server(), s.ts.URL)
	}
	if _, err := c.Get(ctx, cmKind, "default", "a"); err != nil {
		t.Fatal(err)
	}

	if _, err := client.New(&client.Config{Server: s.ts.URL + ",ftp://x"}); err == nil {
		t.Error("a list with a URL that is not http(s) was taken")
	}
}

// A write whose connection breaks may have been made: it is not sent to
// another server, where a create would be made twice, an update with a
// resourceVersion would conflict with itself and a delete find nothing,
// as client-go sends no write again. A read is.
func TestClientSendsAWriteOnce(t *testing.T) {
	s := newServer(t, 0, nil)
	var writes atomic.Int32
	breaking := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	// HTTP/1.1, whose connection a handler may take and close.
	breaking.TLS = &tls.Config{Certificates: s.ts.TLS.Certificates, NextProtos: []string{"http/1.1"}}
	breaking.StartTLS()
	t.Cleanup(breaking.Close)
	tr, err := client.NewTransport(&client.Config{CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(&client.Config{Server: breaking.URL + "," + s.ts.URL, Token: token, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	made, err := s.store.Create(ctx, configMap("there"))
	if err != nil {
		t.Fatal(err)
	}
	changed := made.DeepCopyObject().(*api.ConfigMap)
	changed.Data = map[string]string{"k": "v"}
	for _, w := range []struct {
		name  string
		write func() error
	}{
		{"a create", func() error { _, err := c.Create(ctx, configMap("once")); return err }},
		{"an update", func() error { _, err := c.Update(ctx, changed); return err }},
		{"a delete", func() error { _, err := c.Delete(ctx, cmKind, "default", "there", nil); return err }},
	} {
		writes.Store(0)
		if err := w.write(); err == nil {
			t.Errorf("%s on a broken connection succeeded", w.name)
		}
		if n := writes.Load(); n != 1 {
			t.Errorf("%s reached the breaking server %d times, want once", w.name, n)
		}
		if c.Server() != breaking.URL {
			t.Fatalf("after %s, the client moved on to %s", w.name, c.Server())
		}
	}
	if _, err := s.store.Get(cmKind, "default", "once"); err == nil {
		t.Error("the create went to the second server too")
	}
	got, err := s.store.Get(cmKind, "default", "there")
	if err != nil || got.GetResourceVersion() != made.GetResourceVersion() {
		t.Errorf("the update or delete went to the second server too: %v, %v", got, err)
	}
	if _, _, err := c.List(ctx, cmKind, "default", client.ListOptions{}); err != nil {
		t.Fatalf("a list is sent on to the next server: %v", err)
	}
}

// A server that takes requests and never answers (stopped, or cut off
// with its connections open) costs the request that waited on it: the
// ones after it go to the next server, and so do those of a client
// WithTimeout made.
func TestClientMovesOnFromAServerThatDoesNotAnswer(t *testing.T) {
	s := newServer(t, 0, nil)
	release := make(chan struct{})
	silent := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	silent.EnableHTTP2 = true
	silent.TLS = &tls.Config{Certificates: s.ts.TLS.Certificates}
	silent.StartTLS()
	t.Cleanup(func() {
		close(release)
		silent.Close()
	})
	tr, err := client.NewTransport(&client.Config{CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(&client.Config{Server: silent.URL + "," + s.ts.URL, Token: token, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	// A second of real time: the next create's, to a new connection to
	// the server that answers, on a loaded machine too.
	beat := c.WithTimeout(time.Second)
	ctx := context.Background()
	if _, err := beat.Create(ctx, configMap("lost")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a create the server never answered: %v", err)
	}
	if _, err := s.store.Get(cmKind, "default", "lost"); err == nil {
		t.Fatal("the create was sent again to the second server")
	}
	if c.Server() != s.ts.URL {
		t.Fatalf("the client sends to %s after a request timed out there, want %s", c.Server(), s.ts.URL)
	}
	if _, err := beat.Create(ctx, configMap("next")); err != nil {
		t.Fatalf("the next create: %v", err)
	}
}

// A server whose port takes connections but which never finishes the TLS
// handshake (its process stopped) was sent nothing: even a create moves
// on to the next server.
func TestClientMovesOnFromAServerThatNeverShakesHands(t *testing.T) {
	s := newServer(t, 0, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	tr, err := client.NewTransport(&client.Config{CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	// The server that answers shakes hands within it on a loaded
	// machine too.
	tr.TLSHandshakeTimeout = time.Second
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(&client.Config{Server: "https://" + l.Addr().String() + "," + s.ts.URL, Token: token, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), configMap("made")); err != nil {
		t.Fatalf("a create with the first server frozen: %v", err)
	}
	if c.Server() != s.ts.URL {
		t.Fatalf("the client sends to %s, want %s", c.Server(), s.ts.URL)
	}
}

// A server whose dial times out (a machine that is off, whose address
// drops what is sent to it) was sent nothing: the request goes on to the
// next server, a create included, as past a dial refused.
func TestClientMovesOnFromADialThatTimesOut(t *testing.T) {
	s := newServer(t, 0, nil)
	off := closedURL(t)
	tr, err := client.NewTransport(&client.Config{CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if "https://"+addr == off {
			// A dialer whose timeout passed unanswered.
			return (&net.Dialer{Timeout: time.Nanosecond}).DialContext(ctx, network, addr)
		}
		return dial(ctx, network, addr)
	}
	c, err := client.New(&client.Config{Server: off + "," + s.ts.URL, Token: token, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), configMap("made")); err != nil {
		t.Fatalf("a create with the first server's dial timing out: %v", err)
	}
	if c.Server() != s.ts.URL {
		t.Fatalf("the client sends to %s, want %s", c.Server(), s.ts.URL)
	}
}
