package ingress

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/berth-dev/berth/api"
)

// TestMetricsFollowTheTable: requests are counted on the series of
// their Ingress and backend, and the series of an Ingress or a backend
// that leaves the table are deleted with it, so a cluster that churns
// through Ingresses does not grow its metrics without bound.
func TestMetricsFollowTheTable(t *testing.T) {
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	p := NewProxy(m, slog.New(slog.DiscardHandler), nil)
	objs := func(ings ...*api.Ingress) Objects {
		return Objects{
			Classes:  []*api.IngressClass{api.DefaultIngressClass()},
			Services: []*api.Service{service("default", "web", api.ServicePort{Port: 80}), service("default", "api", api.ServicePort{Port: 80})},
			// No endpoints: each request answers 503 without a dial.
			Ingresses: ings,
		}
	}
	get := func(host string) int {
		w := httptest.NewRecorder()
		p.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://"+host+"/", nil))
		return w.Code
	}
	series := func() string {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				var ls []string
				for _, l := range m.GetLabel() {
					ls = append(ls, l.GetName()+"="+l.GetValue())
				}
				out = append(out, strings.TrimPrefix(mf.GetName(), "berth_ingress_")+"{"+strings.Join(ls, ",")+"}")
			}
		}
		return strings.Join(out, " ")
	}

	shop := ingress("default", "shop", 0, rule("a.test", path("/", prefix, "web", 80)))
	blog := ingress("default", "blog", 1, rule("b.test", path("/", prefix, "api", 80)))
	p.SetTable(Build(objs(shop, blog)))
	for _, h := range []string{"a.test", "a.test", "b.test", "nowhere.test"} {
		get(h)
	}
	if n := testutil.ToFloat64(m.requests.WithLabelValues("default", "shop", "default/web:80", "503")); n != 2 {
		t.Errorf("shop's 503s: %v, want 2", n)
	}
	if n := testutil.ToFloat64(m.requests.WithLabelValues("", "", "", "404")); n != 1 {
		t.Errorf("unrouted 404s: %v, want 1", n)
	}
	before := series()
	for _, want := range []string{
		"requests_total{backend=default/api:80,code=503,ingress=blog,namespace=default}",
		"request_duration_seconds{backend=default/web:80,ingress=shop,namespace=default}",
	} {
		if !strings.Contains(before, want) {
			t.Errorf("missing %s in %s", want, before)
		}
	}

	// blog goes away and shop moves to the api Service: the series of
	// blog and of shop's old backend go, shop's new one comes.
	shop = ingress("default", "shop", 0, rule("a.test", path("/", prefix, "api", 80)))
	p.SetTable(Build(objs(shop)))
	get("a.test")
	after := series()
	for _, gone := range []string{"ingress=blog", "backend=default/web:80"} {
		if strings.Contains(after, gone) {
			t.Errorf("series %q left after its Ingress or backend went: %s", gone, after)
		}
	}
	for _, want := range []string{
		"requests_total{backend=default/api:80,code=503,ingress=shop,namespace=default}",
		"requests_total{backend=,code=404,ingress=,namespace=}",
	} {
		if !strings.Contains(after, want) {
			t.Errorf("missing %s in %s", want, after)
		}
	}
}
