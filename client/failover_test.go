package client_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

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

// A create whose connection breaks may have been made: it is not sent to
// another server, where it would be made twice. A read is.
func TestClientSendsAWriteOnce(t *testing.T) {
	s := newServer(t, 0, nil)
	var posts atomic.Int32
	breaking := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
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
	if _, err := c.Create(ctx, configMap("once")); err == nil {
		t.Fatal("a create on a broken connection succeeded")
	}
	if _, err := s.store.Get(cmKind, "default", "once"); err == nil {
		t.Fatal("the create went to the second server too")
	}
	if _, _, err := c.List(ctx, cmKind, "default", client.ListOptions{}); err != nil {
		t.Fatalf("a list is sent on to the next server: %v", err)
	}
}
