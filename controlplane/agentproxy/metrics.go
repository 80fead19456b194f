package agentproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/reconcile/hpa"
	"github.com/berth-dev/berth/store"
)

// metricsTimeout bounds each agent's answer to a metrics request: a node
// that does not answer in time is left out, as metrics-server leaves out a
// node it cannot scrape.
const metricsTimeout = 5 * time.Second

// metricsPrefix is where metrics.k8s.io/v1beta1 is served.
const metricsPrefix = "/apis/metrics.k8s.io/v1beta1"

var (
	nodeKind = api.KindOf(&api.Node{})
	podKind  = api.KindOf(&api.Pod{})
)

// The resource metrics as metrics.k8s.io/v1beta1 answers them (the types
// of k8s.io/metrics, which kubectl top decodes).
type (
	nodeMetrics struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Timestamp         metav1.Time      `json:"timestamp"`
		Window            metav1.Duration  `json:"window"`
		Usage             api.ResourceList `json:"usage"`
	}
	podMetrics struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Timestamp         metav1.Time        `json:"timestamp"`
		Window            metav1.Duration    `json:"window"`
		Containers        []containerMetrics `json:"containers"`
	}
	containerMetrics struct {
		Name  string           `json:"name"`
		Usage api.ResourceList `json:"usage"`
	}
	metricsList[T any] struct {
		metav1.TypeMeta `json:",inline"`
		metav1.ListMeta `json:"metadata"`
		Items           []T `json:"items"`
	}
)

// registerMetrics serves metrics.k8s.io/v1beta1 on a: nodes and pods, each
// listed (with a label selector) or named, from the resource metrics every
// node's agent samples. Reading them is authorized as reading the nodes
// or pods they are about.
func (p *Proxy) registerMetrics(a *apiserver.Server, authz auth.Authorizer) {
	m := &metricsAPI{proxy: p, authz: authz}
	for _, route := range []struct {
		pattern string
		pods    bool
	}{
		{"/nodes", false},
		{"/nodes/{name}", false},
		{"/pods", true},
		{"/namespaces/{namespace}/pods", true},
		{"/namespaces/{namespace}/pods/{name}", true},
	} {
		a.Handle("GET "+metricsPrefix+route.pattern, m.handler(route.pods), true)
	}
}

type metricsAPI struct {
	proxy *Proxy
	authz auth.Authorizer
}

func (m *metricsAPI) handler(pods bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns, name := r.PathValue("namespace"), r.PathValue("name")
		gr := schema.GroupResource{Group: apiserver.MetricsGroupVersion.Group, Resource: "nodes"}
		if pods {
			gr.Resource = "pods"
		}
		k := apiserver.MetricsKind(gr.Resource)
		verb := auth.VerbList
		if name != "" {
			verb = auth.VerbGet
		}
		id, _ := auth.IdentityFromContext(r.Context())
		if err := m.authz.Authorize(r.Context(), id, auth.Attributes{Verb: verb, Kind: k, Namespace: ns, Name: name}); err != nil {
			// A refusal names the metrics resource, as Kubernetes'; any
			// other failure (the store, say) is what it is, not a 403.
			var fe *auth.ForbiddenError
			if errors.As(err, &fe) {
				err = apierrors.NewForbidden(gr, name, err)
			}
			apiserver.WriteError(w, err)
			return
		}
		for k := range r.URL.Query() {
			if k != "labelSelector" {
				// Not ignored: an answer that left it out would mislead.
				apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("the resource metrics take a labelSelector alone, not %s", k)))
				return
			}
		}
		sel := labels.Everything()
		if s := r.URL.Query().Get("labelSelector"); s != "" && name == "" {
			var err error
			if sel, err = labels.Parse(s); err != nil {
				apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("labelSelector %q: %v", s, err)))
				return
			}
		}
		// One snapshot answers the request: the nodes asked and the pods
		// their samples are matched with are of one revision.
		snap := m.proxy.store.Snapshot()
		nodes, err := nodesToSample(snap, pods, ns, name)
		if err != nil {
			apiserver.WriteError(w, err)
			return
		}
		samples := m.proxy.sampleAgents(r.Context(), nodes)
		var out any
		if pods {
			out, err = podMetricsOf(snap, samples, ns, name, sel)
		} else {
			out, err = nodeMetricsOf(samples, name, sel)
		}
		if err != nil {
			apiserver.WriteError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}

// nodeSample is what one node's agent answered.
type nodeSample struct {
	node    *api.Node
	metrics api.ResourceMetrics
}

// nodesToSample are the nodes whose agents a metrics request needs: the
// node named, the node of the pod named, the nodes of a namespace's pods,
// or every node. A pod or node that does not exist needs none (the answer
// is then a 404 or an empty list).
func nodesToSample(snap *store.Snapshot, pods bool, ns, name string) ([]*api.Node, error) {
	switch {
	case !pods && name != "":
		return nodesNamed(snap, name)
	case pods && name != "":
		obj, err := snap.Get(podKind, ns, name)
		if store.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return nodesNamed(snap, obj.(*api.Pod).Spec.NodeName)
	case pods && ns != "":
		objs, err := snap.List(podKind, store.Filter{Namespace: ns})
		if err != nil {
			return nil, err
		}
		names := map[string]bool{}
		for _, o := range objs {
			names[o.(*api.Pod).Spec.NodeName] = true
		}
		return nodesNamed(snap, slices.Sorted(maps.Keys(names))...)
	}
	objs, err := snap.List(nodeKind, store.Filter{})
	if err != nil {
		return nil, err
	}
	nodes := make([]*api.Node, len(objs))
	for i, o := range objs {
		nodes[i] = o.(*api.Node)
	}
	return nodes, nil
}

// nodesNamed are the nodes of those names that the snapshot has: a node it
// does not have is none, as is no name (a pod not bound yet).
func nodesNamed(snap *store.Snapshot, names ...string) ([]*api.Node, error) {
	var nodes []*api.Node
	for _, n := range names {
		obj, err := snap.Get(nodeKind, "", n)
		if store.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, obj.(*api.Node))
	}
	return nodes, nil
}

// sampleAgents asks the nodes' agents for their resource metrics at once
// and returns those that answered in time, by node name.
func (p *Proxy) sampleAgents(ctx context.Context, nodes []*api.Node) map[string]nodeSample {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]nodeSample{}
	for _, node := range nodes {
		wg.Go(func() {
			m, err := p.agentMetrics(ctx, node)
			if err != nil {
				p.log.Debug("resource metrics of a node left out", "node", node.Name, "err", err)
				return
			}
			mu.Lock()
			out[node.Name] = nodeSample{node: node, metrics: m}
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// agentMetrics fetches one agent's resource metrics.
func (p *Proxy) agentMetrics(ctx context.Context, node *api.Node) (api.ResourceMetrics, error) {
	var m api.ResourceMetrics
	addr, err := agentAddress(node)
	if err != nil {
		return m, err
	}
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	u := "https://" + addr + api.ResourceMetricsPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return m, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	if err := checkAgentIdentity(node.Name, resp); err != nil {
		return m, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, agentErrorBodyLimit))
		return m, fmt.Errorf("the agent answered %d: %s", resp.StatusCode, body)
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&m)
	return m, err
}

// usage is a CPU rate and a working set as Kubernetes quantities.
func usage(u api.ResourceUsage) api.ResourceList {
	return api.ResourceList{
		api.ResourceCPU:    *resource.NewScaledQuantity(u.NanoCores, resource.Nano),
		api.ResourceMemory: *resource.NewQuantity(u.MemoryBytes, resource.BinarySI),
	}
}

func nodeMetricsOf(samples map[string]nodeSample, name string, sel labels.Selector) (any, error) {
	var items []nodeMetrics
	for _, s := range samples {
		n := s.node
		if (name != "" && n.Name != name) || !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		items = append(items, nodeMetrics{
			TypeMeta:   metav1.TypeMeta{Kind: "NodeMetrics", APIVersion: apiserver.MetricsGroupVersion.String()},
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: metav1.NewTime(s.metrics.Timestamp)},
			Timestamp:  metav1.NewTime(s.metrics.Timestamp),
			Window:     metav1.Duration{Duration: s.metrics.Window},
			Usage:      usage(s.metrics.Node),
		})
	}
	if name != "" {
		if len(items) == 0 {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: apiserver.MetricsGroupVersion.Group, Resource: "nodes"}, name)
		}
		return items[0], nil
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	return metricsList[nodeMetrics]{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: apiserver.MetricsGroupVersion.String()}, Items: nonNil(items)}, nil
}

func podMetricsOf(snap *store.Snapshot, samples map[string]nodeSample, ns, name string, sel labels.Selector) (any, error) {
	var items []podMetrics
	eachSampledPod(snap, samples, ns, name, sel, func(s nodeSample, pod *api.Pod, pm api.PodMetrics) {
		item := podMetrics{
			TypeMeta:   metav1.TypeMeta{Kind: "PodMetrics", APIVersion: apiserver.MetricsGroupVersion.String()},
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, Labels: pod.Labels, CreationTimestamp: metav1.NewTime(s.metrics.Timestamp)},
			Timestamp:  metav1.NewTime(s.metrics.Timestamp),
			Window:     metav1.Duration{Duration: s.metrics.Window},
		}
		for _, c := range pm.Containers {
			item.Containers = append(item.Containers, containerMetrics{Name: c.Name, Usage: usage(c.ResourceUsage)})
		}
		items = append(items, item)
	})
	if name != "" {
		if len(items) == 0 {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: apiserver.MetricsGroupVersion.Group, Resource: "pods"}, name)
		}
		return items[0], nil
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].Namespace != items[j].Namespace {
			return items[i].Namespace < items[j].Namespace
		}
		return items[i].Name < items[j].Name
	})
	return metricsList[podMetrics]{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: apiserver.MetricsGroupVersion.String()}, Items: nonNil(items)}, nil
}

// nonNil is items, or an empty list: a list answer has items, even none.
func nonNil[T any](items []T) []T {
	if items == nil {
		return []T{}
	}
	return items
}

// PodUsage is what the HorizontalPodAutoscaler controller reads: the
// same samples metrics.k8s.io answers kubectl top with, of the pods of a
// namespace that sel selects, by pod name.
func (p *Proxy) PodUsage(ctx context.Context, namespace string, sel labels.Selector) (map[string]hpa.PodUsage, error) {
	snap := p.store.Snapshot()
	nodes, err := nodesToSample(snap, true, namespace, "")
	if err != nil {
		return nil, err
	}
	out := map[string]hpa.PodUsage{}
	eachSampledPod(snap, p.sampleAgents(ctx, nodes), namespace, "", sel, func(s nodeSample, pod *api.Pod, pm api.PodMetrics) {
		u := hpa.PodUsage{Timestamp: s.metrics.Timestamp, Window: s.metrics.Window, Containers: map[string]api.ResourceList{}}
		for _, c := range pm.Containers {
			u.Containers[c.Name] = usage(c.ResourceUsage)
		}
		out[pod.Name] = u
	})
	return out, nil
}

// eachSampledPod calls fn for each pod sample of the namespace (all when
// ""), of the pod named (any when ""), whose pod the store still has on
// the node that sampled it, with labels sel matches.
func eachSampledPod(snap *store.Snapshot, samples map[string]nodeSample, ns, name string, sel labels.Selector, fn func(nodeSample, *api.Pod, api.PodMetrics)) {
	for _, s := range samples {
		for _, pm := range s.metrics.Pods {
			if (ns != "" && pm.Namespace != ns) || (name != "" && pm.Name != name) {
				continue
			}
			// The pod as the store has it: its labels, and that it is
			// still the pod bound to this node.
			obj, err := snap.Get(podKind, pm.Namespace, pm.Name)
			if err != nil {
				continue
			}
			pod := obj.(*api.Pod)
			if pod.Spec.NodeName != s.node.Name || !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			fn(s, pod, pm)
		}
	}
}
