package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/api"
)

// healthCheckPorts counts each health-checked Service's ready endpoints
// on the node, and leaves out the Services that have no port or no use
// for one.
func TestHealthCheckPorts(t *testing.T) {
	svc := func(name string, policy corev1.ServiceExternalTrafficPolicy, port int32) *api.Service {
		return &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: api.ServiceSpec{Type: api.ServiceTypeLoadBalancer, ExternalTrafficPolicy: policy, HealthCheckNodePort: port}}
	}
	slice := func(service string, eps ...api.Endpoint) *api.EndpointSlice {
		return &api.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: service + "-x", Labels: map[string]string{api.LabelServiceName: service}}, Endpoints: eps}
	}
	ep := func(node string, ready bool) api.Endpoint {
		return api.Endpoint{NodeName: ptr.To(node), Conditions: api.EndpointConditions{Ready: ptr.To(ready)}}
	}
	got := healthCheckPorts("n1",
		[]*api.Service{svc("web", corev1.ServiceExternalTrafficPolicyLocal, 30100), svc("idle", corev1.ServiceExternalTrafficPolicyLocal, 30101),
			svc("cluster", corev1.ServiceExternalTrafficPolicyCluster, 30102), svc("none", corev1.ServiceExternalTrafficPolicyLocal, 0)},
		[]*api.EndpointSlice{slice("web", ep("n1", true), ep("n1", false), ep("n2", true)), slice("web", ep("n1", true)), slice("idle", ep("n2", true)), slice("cluster", ep("n1", true))})
	want := map[types.NamespacedName]healthState{
		{Namespace: "shop", Name: "web"}:  {port: 30100, local: 2},
		{Namespace: "shop", Name: "idle"}: {port: 30101},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// The health check node port answers as kube-proxy's: 503 while the node
// has no ready endpoint of the Service, 200 once it has, the count in the
// body and a header; it closes when the Service goes.
func TestHealthChecksServe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := int32(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	h := NewHealthChecks("127.0.0.1", slog.New(slog.DiscardHandler))
	t.Cleanup(h.Close)
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	c := &http.Client{Timeout: 5 * time.Second}
	ask := func() (int, string, map[string]any) {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil {
			t.Fatalf("body %q: %v", data, err)
		}
		return resp.StatusCode, resp.Header.Get("X-Load-Balancing-Endpoint-Weight"), body
	}

	if err := h.Sync(map[types.NamespacedName]healthState{key: {port: port}}); err != nil {
		t.Fatal(err)
	}
	if code, weight, body := ask(); code != http.StatusServiceUnavailable || weight != "0" || body["localEndpoints"] != float64(0) ||
		fmt.Sprint(body["service"]) != "map[name:web namespace:shop]" || body["serviceProxyHealthy"] != true {
		t.Errorf("no local endpoint: %d, weight %q, %v", code, weight, body)
	}
	if err := h.Sync(map[types.NamespacedName]healthState{key: {port: port, local: 2}}); err != nil {
		t.Fatal(err)
	}
	if code, weight, body := ask(); code != http.StatusOK || weight != "2" || body["localEndpoints"] != float64(2) {
		t.Errorf("two local endpoints: %d, weight %q, %v", code, weight, body)
	}
	// A port another program holds is an error for that Service alone.
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	other := types.NamespacedName{Namespace: "shop", Name: "other"}
	if err := h.Sync(map[types.NamespacedName]healthState{key: {port: port, local: 1}, other: {port: int32(held.Addr().(*net.TCPAddr).Port)}}); err == nil {
		t.Error("a port held by another program: no error")
	}
	if code, _, _ := ask(); code != http.StatusOK {
		t.Errorf("the other Service's port failed, this one answers %d", code)
	}
	if err := h.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(url); err == nil {
		t.Error("the port still answers once its Service is gone")
	}
}
