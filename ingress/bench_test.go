package ingress

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
)

// BenchmarkIngress measures a small HTTP backend on loopback reached
// directly and through the Ingress proxy, side by side in one run:
// 16 clients with keep-alive, each request timed; it reports requests/s
// and the p50 and p99 latency of each, and of a bare
// httputil.ReverseProxy for reference.
//
//	go test -run XXX -bench Ingress -benchtime 20000x ./ingress/
func BenchmarkIngress(b *testing.B) {
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello, world\n")
	}))
	defer back.Close()
	port := int32(back.Listener.Addr().(*net.TCPAddr).Port)
	e := newBenchEnv(b)
	e.quiet()
	e.put(api.DefaultIngressClass())
	e.serviceWith("web", 80, port)
	e.put(ingress("default", "shop", 0, rule("shop.test", path("/", prefix, "web", 80))))
	for deadline := time.Now().Add(30 * time.Second); ; {
		r := e.srv.proxy.Table().Match("shop.test", "/", false)
		if r != nil && r.Backend != nil && len(r.Backend.Addrs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("no route")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The floor of any proxy built on it: a bare single-host
	// httputil.ReverseProxy, no routing, logs or metrics.
	u, _ := url.Parse(back.URL)
	bare := httputil.NewSingleHostReverseProxy(u)
	bare.Transport = &http.Transport{MaxIdleConnsPerHost: 256}
	front := httptest.NewServer(bare)
	defer front.Close()
	b.Run("direct", func(b *testing.B) { load(b, "http://"+back.Listener.Addr().String()+"/", "") })
	b.Run("ingress", func(b *testing.B) { load(b, "http://"+e.srv.HTTPAddr().String()+"/", "shop.test") })
	b.Run("bare-reverseproxy", func(b *testing.B) { load(b, front.URL+"/", "") })
}

const clients = 16

// load sends b.N GETs from 16 keep-alive clients and reports req/s, p50
// and p99.
func load(b *testing.B, url, host string) {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	lat := make([][]time.Duration, clients)
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				if host != "" {
					req.Host = host
				}
				t0 := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d requests failed", n)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
}
