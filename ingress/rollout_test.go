package ingress

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// endpointSlice is one slice of the web Service naming one backend on
// loopback, in the state a rolling update moves it through.
func endpointSlice(port int32, ready, terminating bool) *api.EndpointSlice {
	return &api.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("web-%d", port), Labels: map[string]string{api.LabelServiceName: "web"}},
		AddressType: api.AddressTypeIPv4,
		Ports:       []api.EndpointSlicePort{{Name: ptr("http"), Port: ptr(port)}},
		Endpoints: []api.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: api.EndpointConditions{
			Ready: ptr(ready), Serving: ptr(true), Terminating: ptr(terminating)}}},
	}
}

// TestRollingUpdateLosesNoRequest replaces the backends behind an
// Ingress three times, as a rolling update does (the new pod ready, the
// old one terminating, then gone and stopped), while four clients send
// requests without pause: every request is answered 200, and they are
// counted.
func TestRollingUpdateLosesNoRequest(t *testing.T) {
	e := newEnv(t)
	e.quiet()
	e.put(api.DefaultIngressClass())
	e.put(&api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: api.ServiceSpec{ClusterIP: api.ClusterIPNone, Ports: []api.ServicePort{{Name: "http", Port: 80}}}})
	old, oldPort := backend(t, "v0")
	e.put(endpointSlice(oldPort, true, false))
	e.put(ingress("default", "shop", 0, rule("a.test", path("/", prefix, "web", 80))))
	c := e.client("", nil)
	eventually(t, "v0", func() bool { _, body, _ := e.get(c, "http://a.test/"); return strings.HasPrefix(body, "v0") })

	var total, failed atomic.Int64
	var firstErr atomic.Value
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				resp, err := c.Get("http://a.test/")
				total.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, resp.Status)
				}
			}
		})
	}
	served := func(port string) func() bool {
		return func() bool {
			r := e.srv.proxy.Table().Match("a.test", "/", false)
			return r != nil && r.Backend != nil && slices.Contains(r.Backend.Addrs, "127.0.0.1:"+port)
		}
	}
	more := func(n int64) {
		from := total.Load()
		eventually(t, "more requests", func() bool { return total.Load() >= from+n })
	}
	for v := 1; v <= 3; v++ {
		next, nextPort := backend(t, fmt.Sprintf("v%d", v))
		e.put(endpointSlice(nextPort, true, false))
		eventually(t, "the new endpoint", served(fmt.Sprint(nextPort)))
		e.put(endpointSlice(oldPort, false, true))
		if _, err := e.store.Delete(context.Background(), sliceKind, "default", fmt.Sprintf("web-%d", oldPort), store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the old endpoint gone", func() bool { return !served(fmt.Sprint(oldPort))() })
		// Some requests go to the new set before the old pod stops.
		more(50)
		old.Close()
		old, oldPort = next, nextPort
	}
	more(50)
	stop()
	wg.Wait()
	t.Logf("%d requests through three rolling updates, %d failed", total.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Errorf("%d of %d requests failed; first: %v", failed.Load(), total.Load(), firstErr.Load())
	}
	if total.Load() < 200 {
		t.Errorf("only %d requests", total.Load())
	}
}
