package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/berth-dev/berth/testtool"
)

// poll calls f until it succeeds or the deadline passes.
func poll(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	testtool.WaitFor(t, timeout, what, f)
}

func TestToolboxHTTPEcho(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testtool.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-v", "toolbox", "http-echo", "--listen", "127.0.0.1:0", "--text", "hello from test"}, strings.NewReader(""), &stdout, &stderr)
	}()

	// The command logs the address it bound; port 0 makes it pick one.
	addrRE := regexp.MustCompile(`msg="http-echo serving" addr=(\S+)`)
	var addr string
	poll(t, 10*time.Second, "the listen address in the log", func() error {
		select {
		case code := <-done:
			t.Fatalf("http-echo exited %d early; stderr:\n%s", code, stderr.String())
		default:
		}
		m := addrRE.FindStringSubmatch(stderr.String())
		if m == nil {
			return fmt.Errorf("not yet; stderr:\n%s", stderr.String())
		}
		addr = m[1]
		return nil
	})

	get := func(path string) (int, string, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	poll(t, 10*time.Second, "the port answering", func() error {
		_, _, err := get("/healthz")
		return err
	})

	for _, tt := range []struct {
		path string
		code int
		body string
	}{
		{"/", http.StatusOK, "hello from test\n"},
		{"/any/path", http.StatusOK, "hello from test\n"},
		{"/healthz", http.StatusOK, "ok\n"},
	} {
		code, body, err := get(tt.path)
		if err != nil {
			t.Fatalf("GET %s: %v", tt.path, err)
		}
		if code != tt.code || body != tt.body {
			t.Errorf("GET %s = %d %q, want %d %q", tt.path, code, body, tt.code, tt.body)
		}
	}
	if !strings.Contains(stderr.String(), `level=DEBUG msg=request method=GET path=/any/path`) {
		t.Errorf("requests not logged at debug level; stderr:\n%s", stderr.String())
	}

	// Cancelling the context is what SIGTERM does in main.
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after cancel; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("http-echo did not stop after its context was cancelled")
	}
	if _, _, err := get("/healthz"); err == nil {
		t.Error("still answering after shutdown")
	}
}

func TestToolboxHTTPEchoBadAddress(t *testing.T) {
	r := runBerth(t, "", "toolbox", "http-echo", "--listen", "127.0.0.1:notaport")
	if r.code != exitFailure || !strings.Contains(r.stderr, "http-echo: listen tcp") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestToolboxHidden(t *testing.T) {
	r := runBerth(t, "", "--help")
	if strings.Contains(r.stdout, "toolbox") {
		t.Errorf("toolbox shows in help:\n%s", r.stdout)
	}
}

// TestToolboxHTTPEchoUpstream runs a front tier that finds its upstream by
// a name only a DNS server of the test knows, as a pod finds a service
// through berth's cluster DNS.
func TestToolboxHTTPEchoUpstream(t *testing.T) {
	back := httptest.NewServer(echoHandler(slog.New(slog.DiscardHandler), "from the back", nil))
	defer back.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(back.URL, "http://"))

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		if q.Question[0].Name == "back.default.svc.cluster.local." && q.Question[0].Qtype == dns.TypeA {
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5},
				A:   net.IPv4(127, 0, 0, 1),
			})
		} else if q.Question[0].Qtype == dns.TypeA {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.ActivateAndServe() }()
	<-started
	defer func() { _ = srv.Shutdown(); <-served }()

	front := httptest.NewServer(echoHandler(slog.New(slog.DiscardHandler), "from the front",
		upstreamClient("http://back.default.svc.cluster.local:"+port+"/", pc.LocalAddr().String())))
	defer front.Close()
	missing := httptest.NewServer(echoHandler(slog.New(slog.DiscardHandler), "from the front",
		upstreamClient("http://gone.default.svc.cluster.local:"+port+"/", pc.LocalAddr().String())))
	defer missing.Close()

	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(front.URL + "/"); code != http.StatusOK || body != "from the front\nfrom the back\n" {
		t.Errorf("front: %d %q", code, body)
	}
	if code, body := get(front.URL + "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("front /healthz: %d %q", code, body)
	}
	if code, body := get(missing.URL + "/"); code != http.StatusBadGateway || !strings.Contains(body, "upstream: ") || !strings.Contains(body, "gone.default.svc.cluster.local") {
		t.Errorf("missing upstream: %d %q", code, body)
	}
}
