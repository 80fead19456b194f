package apiserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
)

// benchPod is a pod as a ReplicaSet makes it and an agent reports it.
func benchPod(i int, node string) *api.Pod {
	p := storetest.Pod(i, node)
	p.Status = api.PodStatus{Phase: api.PodRunning, PodIP: "10.0.0.1", HostIP: "10.0.0.1"}
	return p
}

func nodeName(i, nodes int) string { return storetest.NodeName(i, nodes) }

// benchStore holds n pods spread over nodes.
func benchStore(b *testing.B, n, nodes int) *store.Store {
	b.Helper()
	st, err := store.New(store.Memory{}, store.Options{Logger: quietLogger(), WatcherQueue: 100000})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ctx := context.Background()
	if _, err := st.Create(ctx, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		b.Fatal(err)
	}
	for lo := 0; lo < n; lo += 1000 {
		_, err := st.Txn(ctx, func(tx *store.Txn) error {
			for i := lo; i < min(lo+1000, n); i++ {
				if _, err := tx.Create(benchPod(i, nodeName(i, nodes))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return st
}

func benchServer(b *testing.B, st *store.Store) *apiserver.Server {
	b.Helper()
	srv, err := apiserver.New(apiserver.Config{Store: st, Authenticator: testAuth{}, Authorizer: testAuth{}, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	return srv
}

// serveTLS runs the server's own Serve (its http.Server settings, HTTP/2)
// on loopback and returns a client factory for it.
func serveTLS(b testing.TB, srv *apiserver.Server) (url string, caPEM []byte) {
	b.Helper()
	tlsConfig, caPEM := selfSignedTLS(b)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- srv.Serve(l, tlsConfig)
	}()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return "https://" + l.Addr().String(), caPEM
}

// selfSignedTLS is a server TLS configuration for 127.0.0.1 with a
// self-signed certificate, and that certificate as PEM for clients.
func selfSignedTLS(t testing.TB) (*tls.Config, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "apiserver-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	return cfg, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// bareServer is a server over a new memory store, with test
// authentication and no listener of its own.
func bareServer(t testing.TB, cfg apiserver.Config) (*apiserver.Server, *store.Store) {
	t.Helper()
	st, err := store.New(store.Memory{}, store.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.Store, cfg.Authenticator, cfg.Authorizer, cfg.Logger = st, testAuth{}, testAuth{}, quietLogger()
	srv, err := apiserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv, st
}

func benchClient(b testing.TB, url string, caPEM []byte, tr *http.Transport) *client.Client {
	b.Helper()
	if tr == nil {
		var err error
		if tr, err = client.NewTransport(&client.Config{CAData: caPEM}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(tr.CloseIdleConnections)
	}
	c, err := client.New(&client.Config{Server: url, Token: adminToken, Transport: tr, Timeout: -1})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// countingWriter is a ResponseWriter that only counts.
type countingWriter struct {
	h    http.Header
	n    int64
	code int
}

func (w *countingWriter) Header() http.Header         { return w.h }
func (w *countingWriter) WriteHeader(code int)        { w.code = code }
func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
func (w *countingWriter) Flush()                      {}

// BenchmarkListPods lists 100,000 pods as JSON: "server" is the handler
// alone (its throughput and allocations: it streams, so memory stays
// flat), "client" is the whole path through TLS, HTTP/2 and the client's
// streaming decoder.
func BenchmarkListPods(b *testing.B) {
	const n = 100000
	st := benchStore(b, n, 5000)
	srv := benchServer(b, st)
	b.Run("server", func(b *testing.B) {
		req := httptest.NewRequest("GET", "/api/v1/pods", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		w := &countingWriter{h: http.Header{}}
		srv.Handler().ServeHTTP(w, req)
		if w.code != 0 && w.code != http.StatusOK {
			b.Fatalf("list: %d", w.code)
		}
		b.SetBytes(w.n)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			w := &countingWriter{h: http.Header{}}
			srv.Handler().ServeHTTP(w, req)
		}
		b.ReportMetric(float64(n), "pods/op")
	})
	b.Run("client", func(b *testing.B) {
		url, ca := serveTLS(b, benchServer(b, st))
		c := benchClient(b, url, ca, nil)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			count := 0
			if _, err := c.ListEach(ctx, podKind, "", client.ListOptions{}, func(api.Object) error { count++; return nil }); err != nil || count != n {
				b.Fatalf("list: %d %v", count, err)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
	})
}

// BenchmarkWatchPerNode runs 5,000 watches, one per node, each filtered by
// spec.nodeName as an agent's is, over the server's TLS and HTTP/2 and the
// real client, then updates pods (20 per node) and measures the events
// delivered per second and the delay from just before each update's
// commit to its delivery. "saturated" makes 100,000 updates as fast as 8
// writers can commit them (its delays are mostly queueing); "rate=1000"
// makes 20,000 at 1,000 a second, the delay of a cluster that keeps up.
// Server, client and writers share the machine's CPUs.
func BenchmarkWatchPerNode(b *testing.B) {
	b.Run("saturated", func(b *testing.B) { benchWatch(b, 100000, 0) })
	b.Run("rate=1000", func(b *testing.B) { benchWatch(b, 20000, 1000) })
}

func benchWatch(b *testing.B, updates, rate int) {
	const nodes, pods = 5000, 100000
	for range b.N {
		b.StopTimer()
		st := benchStore(b, pods, nodes)
		srv := benchServer(b, st)
		url, ca := serveTLS(b, srv)
		tr, err := client.NewTransport(&client.Config{CAData: ca})
		if err != nil {
			b.Fatal(err)
		}
		defer tr.CloseIdleConnections()
		c := benchClient(b, url, ca, tr)
		ctx, cancel := context.WithCancel(context.Background())
		rv := strconv.FormatUint(st.Revision(), 10)

		var delivered atomic.Int64
		lat := make([][]time.Duration, nodes)
		var lastDelivery atomic.Int64
		var wg sync.WaitGroup
		watchers := make([]*client.Watcher, nodes)
		for i := range nodes {
			w, err := c.Watch(ctx, podKind, "", client.WatchOptions{ResourceVersion: rv, ListOptions: client.ListOptions{FieldSelector: "spec.nodeName=" + nodeName(i, nodes)}})
			if err != nil {
				b.Fatalf("watch %d: %v", i, err)
			}
			watchers[i] = w
			wg.Go(func() {
				for {
					ev, err := w.Next(ctx)
					if err != nil {
						return
					}
					now := time.Now()
					sent, _ := strconv.ParseInt(ev.Object.GetAnnotations()["bench/sent"], 10, 64)
					lat[i] = append(lat[i], now.Sub(time.Unix(0, sent)))
					lastDelivery.Store(now.UnixNano())
					delivered.Add(1)
				}
			})
		}

		update := func(i int) error {
			name := fmt.Sprintf("web-7d4b9c8f6-%06d", i%pods)
			_, err := st.Txn(ctx, func(tx *store.Txn) error {
				obj, err := tx.Get(podKind, "default", name)
				if err != nil {
					return err
				}
				p := obj.DeepCopyObject().(*api.Pod)
				p.Annotations = map[string]string{"bench/sent": strconv.FormatInt(time.Now().UnixNano(), 10)}
				_, err = tx.Update(p)
				return err
			})
			return err
		}
		b.StartTimer()
		start := time.Now()
		var wwg sync.WaitGroup
		if rate == 0 {
			const writers = 8
			for wr := range writers {
				wwg.Go(func() {
					for i := wr; i < updates; i += writers {
						if err := update(i); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
		} else {
			tick := time.NewTicker(time.Second / time.Duration(rate))
			for i := range updates {
				<-tick.C
				wwg.Go(func() {
					if err := update(i); err != nil {
						b.Error(err)
					}
				})
			}
			tick.Stop()
		}
		wwg.Wait()
		committed := time.Since(start)
		deadline := time.Now().Add(2 * time.Minute)
		for delivered.Load() < int64(updates) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		b.StopTimer()
		if got := delivered.Load(); got != int64(updates) {
			b.Fatalf("delivered %d of %d events", got, updates)
		}
		elapsed := time.Unix(0, lastDelivery.Load()).Sub(start)
		cancel()
		for _, w := range watchers {
			w.Stop()
		}
		wg.Wait()
		var all []time.Duration
		for _, l := range lat {
			all = append(all, l...)
		}
		slices.Sort(all)
		b.ReportMetric(float64(updates)/elapsed.Seconds(), "events/s")
		b.ReportMetric(float64(updates)/committed.Seconds(), "commits/s")
		b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(all[len(all)-1].Microseconds())/1000, "max-ms")
		b.StartTimer()
	}
}

// BenchmarkGetPod GETs one pod through TLS, HTTP/2 and the client from a
// fixed number of goroutines, and at a fixed rate of 2,000 requests per
// second, reporting latency percentiles.
func BenchmarkGetPod(b *testing.B) {
	st := benchStore(b, 1000, 10)
	url, ca := serveTLS(b, benchServer(b, st))
	c := benchClient(b, url, ca, nil)
	ctx := context.Background()
	name := "web-7d4b9c8f6-000500"
	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(len(lat))/b.Elapsed().Seconds(), "req/s")
	}
	for _, conc := range []int{1, 16, 64} {
		b.Run("concurrency="+strconv.Itoa(conc), func(b *testing.B) {
			var mu sync.Mutex
			var lat []time.Duration
			var next atomic.Int64
			total := int64(b.N)
			b.ResetTimer()
			var wg sync.WaitGroup
			for range conc {
				wg.Go(func() {
					var mine []time.Duration
					for next.Add(1) <= total {
						t0 := time.Now()
						if _, err := c.Get(ctx, podKind, "default", name); err != nil {
							b.Error(err)
							return
						}
						mine = append(mine, time.Since(t0))
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				})
			}
			wg.Wait()
			b.StopTimer()
			report(b, lat)
		})
	}
	b.Run("rate=2000", func(b *testing.B) {
		// An open-loop load generator: a request every 500µs whatever the
		// answers, on as many goroutines as it takes.
		lat := make([]time.Duration, b.N)
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		var wg sync.WaitGroup
		b.ResetTimer()
		for i := range b.N {
			<-tick.C
			wg.Go(func() {
				t0 := time.Now()
				if _, err := c.Get(ctx, podKind, "default", name); err != nil {
					b.Error(err)
				}
				lat[i] = time.Since(t0)
			})
		}
		wg.Wait()
		b.StopTimer()
		report(b, lat)
	})
}

// BenchmarkUpdatePodStatus writes pods' statuses as agents do, 16 at a
// time over one HTTP/2 connection to a store of 10,000 pods, while 500
// agents' watches of their pods are open (and idle: they watch other
// nodes) on another: the request an agent sends for every pod it starts,
// on a server that, like any, holds many quiet goroutines.
func BenchmarkUpdatePodStatus(b *testing.B) {
	const pods = 10000
	st := benchStore(b, pods, 100)
	url, ca := serveTLS(b, benchServer(b, st))
	c := benchClient(b, url, ca, nil)
	objs, _, err := st.List(podKind, store.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wc := benchClient(b, url, ca, nil)
	for i := range 500 {
		w, err := wc.Watch(ctx, podKind, "", client.WatchOptions{ListOptions: client.ListOptions{FieldSelector: fmt.Sprintf("spec.nodeName=idle-%d", i)}})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
	}
	var next atomic.Int64
	total := int64(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > total {
					return
				}
				p := objs[int(i)%pods].DeepCopyObject().(*api.Pod)
				p.ResourceVersion = ""
				p.Status.PodIP = fmt.Sprintf("10.1.%d.%d", i>>8&255, i&255)
				if _, err := c.UpdateStatus(ctx, p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
