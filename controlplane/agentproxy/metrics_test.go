package agentproxy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
)

// TestMetricsOf: the agents' samples become metrics.k8s.io's lists and
// objects, CPU in nanocores and memory in bytes, filtered by name, label
// selector and namespace; a pod the store no longer has, or has on another
// node, is left out; a name with no metrics is a 404.
func TestMetricsOf(t *testing.T) {
	st := storeWithNode(t)
	mk := func(ns, name, node string, lbls map[string]string) *api.Pod {
		p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
		p.Spec.NodeName = node
		p.Spec.Containers = []api.Container{{Name: "app", Image: "app"}}
		api.Default(p)
		if _, err := st.Create(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("default", "web", "n1", map[string]string{"app": "web"})
	mk("default", "moved", "n2", nil)
	mk("shop", "db", "n1", map[string]string{"app": "db"})
	node, err := st.Get(nodeKind, "", "n1")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	usage := func(cores, mem int64) api.ResourceUsage { return api.ResourceUsage{NanoCores: cores, MemoryBytes: mem} }
	samples := map[string]nodeSample{"n1": {node: node.(*api.Node), metrics: api.ResourceMetrics{
		Timestamp: at, Window: 10 * time.Second, Node: usage(1_500_000_000, 2<<30),
		Pods: []api.PodMetrics{
			{Namespace: "default", Name: "web", Containers: []api.ContainerMetrics{{Name: "app", ResourceUsage: usage(250_000_000, 64<<20)}}},
			{Namespace: "default", Name: "moved", Containers: []api.ContainerMetrics{{Name: "app", ResourceUsage: usage(1, 1)}}},
			{Namespace: "default", Name: "gone", Containers: []api.ContainerMetrics{{Name: "app", ResourceUsage: usage(1, 1)}}},
			{Namespace: "shop", Name: "db", Containers: []api.ContainerMetrics{{Name: "app", ResourceUsage: usage(1_000_000, 1<<30)}}},
		},
	}}}
	encode := func(v any, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	got := encode(nodeMetricsOf(samples, "", labels.Everything()))
	for _, want := range []string{`"kind":"NodeMetricsList"`, `"apiVersion":"metrics.k8s.io/v1beta1"`, `"name":"n1"`, `"window":"10s"`, `"cpu":"1500m"`, `"memory":"2Gi"`, `"timestamp":"2026-11-30T12:00:00Z"`} {
		if !strings.Contains(got, want) {
			t.Errorf("node list %s lacks %s", got, want)
		}
	}
	if got := encode(nodeMetricsOf(samples, "", labels.SelectorFromSet(labels.Set{"zone": "b"}))); !strings.Contains(got, `"items":[]`) {
		t.Errorf("nodes selected by a label none has: %s", got)
	}
	if _, err := nodeMetricsOf(samples, "n2", labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("a node without metrics: %v", err)
	}
	got = encode(podMetricsOf(st.Snapshot(), samples, "default", "", labels.Everything()))
	if !strings.Contains(got, `"name":"web"`) || !strings.Contains(got, `"cpu":"250m"`) || !strings.Contains(got, `"memory":"64Mi"`) ||
		strings.Contains(got, "moved") || strings.Contains(got, "gone") || strings.Contains(got, `"db"`) {
		t.Errorf("pods of default: %s", got)
	}
	got = encode(podMetricsOf(st.Snapshot(), samples, "", "", labels.SelectorFromSet(labels.Set{"app": "db"})))
	if !strings.Contains(got, `"name":"db"`) || strings.Contains(got, `"name":"web"`) {
		t.Errorf("pods of every namespace with app=db: %s", got)
	}
	got = encode(podMetricsOf(st.Snapshot(), samples, "shop", "db", labels.Everything()))
	if !strings.Contains(got, `"kind":"PodMetrics"`) || !strings.Contains(got, `"cpu":"1m"`) {
		t.Errorf("pod shop/db: %s", got)
	}
	if _, err := podMetricsOf(st.Snapshot(), samples, "default", "gone", labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("a pod the store does not have: %v", err)
	}
}

// TestNodesToSample: a metrics request asks only the agents it needs: the
// node named, the node of the pod named, the nodes of a namespace's pods,
// or every node for a list of nodes or of every namespace's pods; a node
// the store does not have is none.
func TestNodesToSample(t *testing.T) {
	st := storeWithNode(t)
	for _, n := range []string{"n2", "n3"} {
		node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
		api.Default(node)
		if _, err := st.Create(t.Context(), node); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []struct{ ns, name, node string }{{"default", "web", "n1"}, {"default", "db", "n2"}, {"shop", "cart", "n3"}, {"shop", "pending", ""}, {"shop", "orphan", "gone"}} {
		pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name}}
		pod.Spec.NodeName = p.node
		pod.Spec.Containers = []api.Container{{Name: "app", Image: "app"}}
		api.Default(pod)
		if _, err := st.Create(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
	}
	snap := st.Snapshot()
	for _, c := range []struct {
		pods     bool
		ns, name string
		want     string
	}{
		{false, "", "", "n1,n2,n3"},
		{false, "", "n2", "n2"},
		{false, "", "nope", ""},
		{true, "", "", "n1,n2,n3"},
		{true, "default", "", "n1,n2"},
		{true, "shop", "cart", "n3"},
		{true, "shop", "", "n3"},
		{true, "shop", "pending", ""},
		{true, "shop", "orphan", ""},
		{true, "default", "cart", ""},
		{true, "default", "nope", ""},
	} {
		nodes, err := nodesToSample(snap, c.pods, c.ns, c.name)
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		if err != nil || strings.Join(names, ",") != c.want {
			t.Errorf("pods %v %s/%s: %v, %v; want %s", c.pods, c.ns, c.name, names, err, c.want)
		}
	}
}
