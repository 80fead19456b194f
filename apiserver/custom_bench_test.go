package apiserver_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// benchKind is one side of BenchmarkCustomVsConfigMap: where its
// objects are served, and object i as JSON, about 1 KiB either way.
type benchKind struct {
	name, path string
	body       func(i int) string
}

// BenchmarkCustomVsConfigMap prices what a custom resource costs per
// write and per read beside a built-in kind: a Widget (CRD with a
// structural schema, a CEL rule, printer columns) and a ConfigMap, each
// about 1 KiB of JSON, created one by one through the API server's
// handler, listed 1,000 at a time, and watched as they are written.
func BenchmarkCustomVsConfigMap(b *testing.B) {
	const group = "bench.example.com"
	filler := strings.Repeat("a", 1000)
	kinds := []benchKind{
		{"configmap", "/api/v1/namespaces/default/configmaps", func(i int) string {
			return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"o-%d"},"data":{"size":"small","color":%q}}`, i, filler)
		}},
		{"widget", "/apis/" + group + "/v1/namespaces/default/widgets", func(i int) string {
			return fmt.Sprintf(`{"apiVersion":"`+group+`/v1","kind":"Widget","metadata":{"name":"o-%d"},"spec":{"size":"small","color":%q}}`, i, filler)
		}},
	}
	newServer := func(b *testing.B) (*store.Store, http.Handler) {
		st, err := store.New(store.Memory{}, store.Options{Logger: quietLogger(), WatcherQueue: 100000})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		if _, err := st.Create(context.Background(), &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
			b.Fatal(err)
		}
		withCRD(b, st, widgetCRD(b, group))
		return st, benchServer(b, st).Handler()
	}
	post := func(b *testing.B, h http.Handler, k benchKind, i int) {
		req := httptest.NewRequest("POST", k.path, strings.NewReader(k.body(i)))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusCreated {
			b.Fatalf("create %s %d: %d %s", k.name, i, w.Code, w.Body)
		}
	}
	for _, k := range kinds {
		b.Run(k.name+"/create", func(b *testing.B) {
			_, h := newServer(b)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				post(b, h, k, i)
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "objects/s")
		})
		b.Run(k.name+"/list", func(b *testing.B) {
			const n = 1000
			_, h := newServer(b)
			for i := range n {
				post(b, h, k, i)
			}
			req := httptest.NewRequest("GET", k.path, nil)
			req.Header.Set("Authorization", "Bearer "+adminToken)
			b.ReportAllocs()
			for b.Loop() {
				w := &countingWriter{h: http.Header{}}
				h.ServeHTTP(w, req)
				if w.code != 0 && w.code != http.StatusOK {
					b.Fatalf("list: %d", w.code)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		})
		b.Run(k.name+"/watch", func(b *testing.B) {
			_, h := newServer(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			events := &eventCounter{want: int64(b.N), done: make(chan struct{})}
			req := httptest.NewRequestWithContext(ctx, "GET", k.path+"?watch=true&resourceVersion=0", nil)
			req.Header.Set("Authorization", "Bearer "+adminToken)
			served := make(chan struct{})
			go func() {
				defer close(served)
				h.ServeHTTP(events, req)
			}()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				post(b, h, k, i)
			}
			<-events.done
			b.StopTimer()
			cancel()
			<-served
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// eventCounter is a watch's ResponseWriter that counts the events (one
// JSON object a line) and closes done at want.
type eventCounter struct {
	h          http.Header
	n, want    int64
	done       chan struct{}
	closedOnce atomic.Bool
}

func (c *eventCounter) Header() http.Header {
	if c.h == nil {
		c.h = http.Header{}
	}
	return c.h
}
func (c *eventCounter) WriteHeader(int) {}
func (c *eventCounter) Flush()          {}
func (c *eventCounter) Write(p []byte) (int, error) {
	if atomic.AddInt64(&c.n, int64(bytes.Count(p, []byte("\n")))) >= c.want && c.closedOnce.CompareAndSwap(false, true) {
		close(c.done)
	}
	return len(p), nil
}
