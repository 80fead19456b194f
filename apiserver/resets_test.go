package apiserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/client"
)

// h2Conn is a raw HTTP/2 client connection: frames written by hand.
type h2Conn struct {
	t    *testing.T
	conn *tls.Conn
	fr   *http2.Framer
	host string
	// goAway is closed when a GOAWAY arrives or the connection ends.
	goAway chan struct{}
	gotGo  atomic.Bool
	// mu serialises writes: the reader acknowledges settings.
	mu sync.Mutex
}

func dialH2(t *testing.T, url string, caPEM []byte) *h2Conn {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	host := strings.TrimPrefix(url, "https://")
	conn, err := tls.Dial("tcp", host, &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, not h2", p)
	}
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	c := &h2Conn{t: t, conn: conn, fr: http2.NewFramer(conn, conn), host: host, goAway: make(chan struct{})}
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.goAway)
		for {
			f, err := c.fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.GoAwayFrame:
				c.gotGo.Store(true)
				return
			case *http2.SettingsFrame:
				if !f.IsAck() {
					c.mu.Lock()
					_ = c.fr.WriteSettingsAck()
					c.mu.Unlock()
				}
			}
		}
	}()
	return c
}

// headers opens stream id with a GET of path.
func (c *h2Conn) headers(id uint32, path, token string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", c.host}, {":path", path}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if token != "" {
		_ = enc.WriteField(hpack.HeaderField{Name: "authorization", Value: "Bearer " + token})
	}
	return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: buf.Bytes(), EndStream: true, EndHeaders: true})
}

// reset resets stream id.
func (c *h2Conn) reset(id uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
}

// A client that opens and resets streams in a loop is told to go away
// (GOAWAY) once it has reset a few hundred, rather than running a
// handler for every one, as x/net/http2 alone does.
func TestHTTP2RapidResetGetsGoAway(t *testing.T) {
	srv, _ := bareServer(t, apiserver.Config{})
	var handlers atomic.Int64
	srv.Handle("/hold", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}), true)
	url, caPEM := serveTLS(t, srv)
	c := dialH2(t, url, caPEM)
	const streams = 3000
	sent := 0
	for i := range streams {
		id := uint32(2*i + 1)
		if c.headers(id, "/hold", adminToken) != nil || c.reset(id) != nil {
			break // the server closed the connection
		}
		sent++
		if c.gotGo.Load() {
			break
		}
	}
	select {
	case <-c.goAway:
	case <-time.After(10 * time.Second):
	}
	if !c.gotGo.Load() {
		t.Fatalf("%d streams opened and reset, %d handlers run, and no GOAWAY", sent, handlers.Load())
	}
	if n := handlers.Load(); n > 1000 {
		t.Fatalf("%d handlers ran before the GOAWAY", n)
	}
	t.Logf("GOAWAY after %d streams sent, %d handlers run", sent, handlers.Load())

	// A well-behaved client on its own connection is served.
	cl := benchClient(t, url, caPEM, nil)
	if _, err := cl.Get(context.Background(), nsKind, "", "absent"); client.Code(err) != http.StatusNotFound {
		t.Fatalf("a new connection after the GOAWAY: %v", err)
	}
}

// A request without valid credentials over HTTP/2 gets its 401 and a
// GOAWAY, as in Kubernetes: an unauthenticated client keeps no HTTP/2
// connection to abuse.
func TestHTTP2UnauthenticatedGetsGoAway(t *testing.T) {
	srv, _ := bareServer(t, apiserver.Config{})
	url, caPEM := serveTLS(t, srv)
	for _, token := range []string{"", "forged"} {
		c := dialH2(t, url, caPEM)
		if err := c.headers(1, "/api/v1/namespaces", token); err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.goAway:
		case <-time.After(10 * time.Second):
		}
		if !c.gotGo.Load() {
			t.Fatalf("token %q: no GOAWAY after a 401", token)
		}
	}
}
