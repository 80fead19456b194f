package apiserver_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/berth-dev/berth/apiserver"
)

// acceptCounter is a listener that says when it has accepted a
// connection.
type acceptCounter struct {
	net.Listener
	accepted chan struct{}
}

func (l *acceptCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted <- struct{}{}
	}
	return c, err
}

// startH2 speaks HTTP/2 on a TLS connection and reports, on the channel
// it returns, the error code of the first GOAWAY the server sends; it is
// closed if the connection ends first.
func startH2(t *testing.T, c *tls.Conn) <-chan http2.ErrCode {
	t.Helper()
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	goAway := make(chan http2.ErrCode, 1)
	go func() {
		defer close(goAway)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if g, ok := f.(*http2.GoAwayFrame); ok {
				goAway <- g.ErrCode
				return
			}
		}
	}()
	return goAway
}

// TestShutdownReachesLateConnections: a connection whose TLS handshake
// ends after Shutdown has told the open connections to go away (a client
// retrying the requests a GOAWAY turned away does that) is told too, and
// Shutdown returns once it has gone, not at its deadline.
func TestShutdownReachesLateConnections(t *testing.T) {
	srv, _ := bareServer(t, apiserver.Config{})
	serverTLS, _ := selfSignedTLS(t)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &acceptCounter{Listener: inner, accepted: make(chan struct{}, 2)}
	served := make(chan error, 1)
	go func() {
		served <- srv.Serve(l, serverTLS)
	}()
	clientTLS := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}

	// One connection is open when Shutdown begins; the other is accepted
	// but has not begun its handshake.
	early, err := tls.Dial("tcp", inner.Addr().String(), clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	earlyGoAway := startH2(t, early)
	raw, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for range 2 {
		<-l.accepted
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	start := time.Now()
	go func() { shut <- srv.Shutdown(ctx) }()
	if code, ok := <-earlyGoAway; !ok || code != http2.ErrCodeNo {
		t.Fatalf("open connection: GOAWAY %v (received: %v), want NO_ERROR", code, ok)
	}

	// Only now does the second connection finish its handshake.
	late := tls.Client(raw, clientTLS)
	lateGoAway := startH2(t, late)
	select {
	case code, ok := <-lateGoAway:
		if !ok || code != http2.ErrCodeNo {
			t.Fatalf("late connection: GOAWAY %v (received: %v), want NO_ERROR", code, ok)
		}
	case <-ctx.Done():
		t.Fatal("the late connection was never told to go away")
	}
	if err := <-shut; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown took %v", took)
	}
	if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("serve: %v", err)
	}
}
