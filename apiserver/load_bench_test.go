package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
)

// The large-object load: many readers of one 1 MB ConfigMap, against the
// server's own Serve (TLS, HTTP/2) on loopback, from this process. It
// reports the process's peak RSS over the run (the clients read and
// discard, so it is the server's), the readers' latencies, and the
// slowest of the small writes a "node heartbeat" makes every 100 ms
// meanwhile. Run with -benchtime=1x; figures in docs/benchmarks.md.

// rssBytes is the process's resident set, from /proc.
func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// rssPeak samples the RSS every 5 ms until stopped and returns the peak.
func rssPeak() (stop func() int64) {
	var peak atomic.Int64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if r := rssBytes(); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-finished
		return peak.Load()
	}
}

// loadTransports are n HTTP/2 connections' worth of transports.
func loadTransports(b *testing.B, caPEM []byte, n int) []*http.Transport {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	trs := make([]*http.Transport, n)
	for i := range trs {
		trs[i] = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
		b.Cleanup(trs[i].CloseIdleConnections)
	}
	return trs
}

func loadRequest(ctx context.Context, method, url string, body []byte) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// heartbeats writes a small object every 100 ms until ctx ends and
// returns the slowest write and how many failed.
func heartbeats(ctx context.Context, url string, tr *http.Transport) (wait func() (time.Duration, int)) {
	var slowest time.Duration
	failed := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			body := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default","name":"heartbeat"},"data":{"beat":"%d"}}`, i)
			start := time.Now()
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			resp, err := tr.RoundTrip(loadRequest(rctx, "PUT", url+"/api/v1/namespaces/default/configmaps/heartbeat", body))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed++
				}
			} else if ctx.Err() == nil {
				failed++
			}
			cancel()
			slowest = max(slowest, time.Since(start))
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() (time.Duration, int) { <-done; return slowest, failed }
}

func largeObjectServer(b *testing.B) (url string, caPEM []byte) {
	srv, st := bareServer(b, apiserver.Config{})
	url, caPEM = serveTLS(b, srv)
	ctx := context.Background()
	if _, err := st.Create(ctx, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		b.Fatal(err)
	}
	blob := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	for _, cm := range []*api.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "big"}, Data: map[string]string{"blob": blob}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "heartbeat"}},
	} {
		if _, err := st.Create(ctx, cm); err != nil {
			b.Fatal(err)
		}
	}
	return url, caPEM
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

func reportLoad(b *testing.B, base, peak int64, lat []time.Duration, beat time.Duration, beatFailed, failed int) {
	b.ReportMetric(float64(base)/(1<<20), "base-RSS-MB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(percentile(lat, 0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Milliseconds()), "p99-ms")
	b.ReportMetric(float64(beat.Milliseconds()), "heartbeat-max-ms")
	b.ReportMetric(float64(beatFailed), "heartbeats-failed")
	b.ReportMetric(float64(failed), "failed")
}

// BenchmarkLargeObjectGets: 200 parallel GETs of a 1 MiB ConfigMap, over
// 10 connections.
func BenchmarkLargeObjectGets(b *testing.B) {
	url, caPEM := largeObjectServer(b)
	trs := loadTransports(b, caPEM, 11)
	for b.Loop() {
		runtime.GC()
		base := rssBytes()
		stop := rssPeak()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		beats := heartbeats(ctx, url, trs[10])
		lat := make([]time.Duration, 200)
		var failed atomic.Int64
		var wg sync.WaitGroup
		for i := range lat {
			wg.Go(func() {
				start := time.Now()
				resp, err := trs[i%10].RoundTrip(loadRequest(ctx, "GET", url+"/api/v1/namespaces/default/configmaps/big", nil))
				if err != nil {
					failed.Add(1)
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || n < 1<<20 {
					failed.Add(1)
				}
				lat[i] = time.Since(start)
			})
		}
		wg.Wait()
		cancel()
		beat, beatFailed := beats()
		reportLoad(b, base, stop(), lat, beat, beatFailed, int(failed.Load()))
	}
}

// skipLine reads past the next newline, holding no more than r's buffer.
func skipLine(r *bufio.Reader) error {
	for {
		_, err := r.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// BenchmarkLargeObjectWatches: 1,000 watches of a 1 MiB ConfigMap over
// 10 connections, each sent the object (ADDED), then one change of it
// (MODIFIED) that every watch receives. Latency is from the start to a
// watch's ADDED, and from the change to its MODIFIED.
func BenchmarkLargeObjectWatches(b *testing.B) {
	url, caPEM := largeObjectServer(b)
	trs := loadTransports(b, caPEM, 11)
	const watches = 1000
	for b.Loop() {
		runtime.GC()
		base := rssBytes()
		stop := rssPeak()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		beats := heartbeats(ctx, url, trs[10])
		var (
			failed  atomic.Int64
			added   sync.WaitGroup
			wg      sync.WaitGroup
			changed = make(chan struct{})
			mu      sync.Mutex
			lat     []time.Duration
			changeT time.Time
		)
		start := time.Now()
		added.Add(watches)
		for i := range watches {
			wg.Go(func() {
				addedOnce := sync.OnceFunc(added.Done)
				defer addedOnce()
				resp, err := trs[i%10].RoundTrip(loadRequest(ctx, "GET", url+"/api/v1/namespaces/default/configmaps?watch=true&fieldSelector=metadata.name%3Dbig", nil))
				if err != nil {
					failed.Add(1)
					return
				}
				defer resp.Body.Close()
				r := bufio.NewReaderSize(resp.Body, 4096)
				if resp.StatusCode != http.StatusOK || skipLine(r) != nil {
					failed.Add(1)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
				addedOnce()
				<-changed
				if skipLine(r) != nil {
					failed.Add(1)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(changeT))
				mu.Unlock()
			})
		}
		added.Wait()
		body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default","name":"big"},"data":{"blob":"` + strings.Repeat("fedcba9876543210", 1<<16) + `"}}`)
		changeT = time.Now()
		close(changed)
		resp, err := trs[10].RoundTrip(loadRequest(ctx, "PUT", url+"/api/v1/namespaces/default/configmaps/big", body))
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("change: %v %v", err, resp)
		}
		resp.Body.Close()
		wg.Wait()
		cancel()
		beat, beatFailed := beats()
		reportLoad(b, base, stop(), lat, beat, beatFailed, int(failed.Load()))
	}
}
