package ingress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/berth-dev/berth/api"
)

// backendProcessEnv makes the test binary a backend: it serves on a
// loopback port, which it prints, until it is killed.
const backendProcessEnv = "BERTH_INGRESS_TEST_BACKEND"

func TestMain(m *testing.M) {
	if name := os.Getenv(backendProcessEnv); name != "" {
		os.Exit(serveBackendProcess(name))
	}
	os.Exit(m.Run())
}

func serveBackendProcess(name string) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%s %s", name, r.Method)
	}))
	return 1
}

// backendProcess starts the test binary as a backend in a process of
// its own, to be killed.
func backendProcess(t *testing.T, name string) (*exec.Cmd, int32) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), backendProcessEnv+"="+name)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("backend process: %v", err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("backend process printed %q", line)
	}
	return cmd, int32(port)
}

// TestBackendKilledBeforeItsEndpointGoes: a backend process is killed
// (SIGKILL) under load while its endpoint is still in the
// EndpointSlice, as when a node or pod dies before the endpoint
// controller notices. Every GET, HEAD, OPTIONS, DELETE and PUT, with a
// body or without, is still answered 200: those that meet the dead
// endpoint (refused, or reset on a kept-alive connection) are tried on
// the live one, their bodies kept for it. POSTs, never sent twice, may
// fail.
func TestBackendKilledBeforeItsEndpointGoes(t *testing.T) {
	e := newEnv(t)
	e.quiet()
	_, livePort := backend(t, "live")
	doomed, doomedPort := backendProcess(t, "doomed")
	e.put(api.DefaultIngressClass())
	e.serviceWith("web", 80, livePort, doomedPort)
	e.put(ingress("default", "shop", 0, rule("a.test", path("/", prefix, "web", 80))))
	c := e.client("", nil)
	eventually(t, "two endpoints", func() bool {
		r := e.srv.proxy.Table().Match("a.test", "/", false)
		return r != nil && r.Backend != nil && len(r.Backend.Addrs) == 2
	})

	requests := []struct{ method, body string }{
		{http.MethodGet, ""}, {http.MethodHead, ""}, {http.MethodOptions, ""}, {http.MethodDelete, ""},
		{http.MethodPut, strings.Repeat("put ", 2048)}, {http.MethodDelete, `{"gracePeriodSeconds":0}`},
	}
	var total, failed, toDoomed atomic.Int64
	var firstErr atomic.Value
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for n := i; ctx.Err() == nil; n++ {
				r := requests[n%len(requests)]
				var reqBody io.Reader
				if r.body != "" {
					reqBody = strings.NewReader(r.body)
				}
				req, _ := http.NewRequest(r.method, "http://a.test/", reqBody)
				resp, err := c.Do(req)
				total.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, req.Method+" "+resp.Status)
				}
				if strings.HasPrefix(string(body), "doomed") {
					toDoomed.Add(1)
				}
			}
		})
	}
	more := func(n int64) {
		from := total.Load()
		eventually(t, "more requests", func() bool { return total.Load() >= from+n })
	}
	eventually(t, "requests answered by the doomed backend", func() bool { return toDoomed.Load() >= 20 })
	if err := doomed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = doomed.Wait()
	more(200)
	stop()
	wg.Wait()
	t.Logf("%d requests, %d answered by the killed backend before it died, %d failed", total.Load(), toDoomed.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Errorf("%d of %d idempotent requests failed; first: %v", failed.Load(), total.Load(), firstErr.Load())
	}
	if n := testutil.ToFloat64(e.srv.proxy.metrics.upstreamErrors.WithLabelValues("default", "shop", "default/web:80")); n == 0 {
		t.Error("no upstream error counted: the killed backend was never tried")
	}
}
