package apiserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/apiserver"
)

// The bytes of answers being written are bounded per class: slow readers
// of a large object hold their answers' bytes until they read them or
// go, and while they hold the whole budget the next reader is told to
// come back (429 with Retry-After) after a short wait. A node's read is
// never counted. Once the slow readers go, the bytes are free again.
func TestByteBudget(t *testing.T) {
	const bigData = 16 << 20 // far more than loopback buffers take unread
	auth := &holdingAuth{release: make(chan struct{})}
	fc := clocktesting.NewFakeClock(time.Now())
	e := newEnv(t, withConfig(func(c *apiserver.Config) {
		c.Authenticator, c.Authorizer = auth, auth
		c.Clock = fc
		// Two answers of the big object and a little more: room for
		// both slow readers, none for a third answer of 64 KiB.
		c.MaxBytesInflight = 2*bigData + 4096
	}))
	big := configMap("big")
	big.Data = map[string]string{"k": strings.Repeat("x", bigData)}
	if _, err := e.store.Create(context.Background(), big); err != nil {
		t.Fatal(err)
	}
	medium := configMap("medium")
	medium.Data = map[string]string{"k": strings.Repeat("y", 64<<10)}
	e.mustCreate(medium)
	const cms = "/api/v1/namespaces/default/configmaps"

	// get answers a GET, moving the clock on while it waits, so that a
	// wait for bytes ends.
	get := func(path, token string) (int, http.Header, []byte) {
		type answer struct {
			code int
			h    http.Header
			body []byte
		}
		done := make(chan answer, 1)
		go func() {
			code, h, body := e.do("GET", path, token, "", "", nil)
			done <- answer{code, h, body}
		}()
		for {
			select {
			case a := <-done:
				return a.code, a.h, a.body
			case <-time.After(5 * time.Millisecond):
				fc.Step(time.Second)
			}
		}
	}

	// Slow readers: HTTP/1.1 connections that ask for the big object
	// and never read the answer.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.caPEM)
	var slow []net.Conn
	for range 2 {
		c, err := tls.Dial("tcp", e.ts.Listener.Addr().String(), &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := fmt.Fprintf(c, "GET %s/big HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer %s\r\n\r\n", cms, adminToken); err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
	}
	eventually(t, "the slow readers hold the budget", func() bool {
		code, _, _ := get(cms+"/medium", readerToken)
		return code == http.StatusTooManyRequests
	})
	code, h, body := get(cms+"/medium", readerToken)
	st := status(t, code, body, http.StatusTooManyRequests)
	if h.Get("Retry-After") != "1" || !strings.Contains(st.Message, "bytes of read answers in flight") {
		t.Fatalf("429: Retry-After %q, %q", h.Get("Retry-After"), st.Message)
	}
	// A node's read is in no budget: it goes through, even of the big
	// object.
	if code, _, body := get(cms+"/big", nodeToken); code != http.StatusOK || len(body) < bigData {
		t.Fatalf("a node's read while the budget is spent: %d, %d bytes", code, len(body))
	}
	// An error answer takes none either.
	if code, _, _ := get(cms+"/absent", readerToken); code != http.StatusNotFound {
		t.Fatalf("a missing object while the budget is spent: %d", code)
	}

	for _, c := range slow {
		c.Close()
	}
	eventually(t, "the budget is free once the slow readers go", func() bool {
		code, _, _ := get(cms+"/medium", readerToken)
		return code == http.StatusOK
	})
	if code, _, body := get(cms+"/big", readerToken); code != http.StatusOK || len(body) < bigData {
		t.Fatalf("a read of the big object once the budget is free: %d, %d bytes", code, len(body))
	}
}

// An answer larger than the whole budget is served alone rather than
// never: it takes the whole budget, and others wait for it.
func TestByteBudgetLargerThanBudget(t *testing.T) {
	e := newEnv(t, withConfig(func(c *apiserver.Config) { c.MaxBytesInflight = 1024 }))
	cm := configMap("large")
	cm.Data = map[string]string{"k": strings.Repeat("z", 64<<10)}
	e.mustCreate(cm)
	code, _, body := e.do("GET", "/api/v1/namespaces/default/configmaps/large", readerToken, "", "", nil)
	if code != http.StatusOK || len(body) < 64<<10 {
		t.Fatalf("an answer larger than the budget: %d, %d bytes", code, len(body))
	}
}
