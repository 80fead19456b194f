package sim

import (
	"bytes"
	"context"
	"net/url"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
)

func TestRunSmall(t *testing.T) {
	var progress bytes.Buffer
	var st *store.Store
	opts := Options{Nodes: 20, Pods: 500, ReplicaSets: 3, Progress: &progress, Timeout: 2 * time.Minute}
	var goroutines bytes.Buffer
	opts.Measuring = func() { _ = pprof.Lookup("goroutine").WriteTo(&goroutines, 1) }
	res, err := run(context.Background(), opts, func(s *store.Store) { st = s; checkCapacity(t, s, 20, 500) })
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if res.Nodes != 20 || res.Pods != 500 || res.Scheduled != 500 || res.Running != 500 {
		t.Fatalf("result %+v", res)
	}
	if res.PodsPerSecond <= 0 || res.ScheduleSeconds <= 0 || res.BoundSeconds < res.ScheduleSeconds || res.P99BindMs < res.P50BindMs || res.PeakRSSMB <= 0 ||
		res.CPUSeconds <= 0 || res.CPUMsPerPod <= 0 {
		t.Errorf("implausible result %+v", res)
	}
	jsonKeys(t, res, "nodes", "pods", "scheduled", "running", "schedule_seconds", "pods_per_second", "p50_bind_ms",
		"p99_bind_ms", "p99_running_ms", "peak_rss_mb", "bound_seconds", "cpu_seconds", "cpu_ms_per_pod")
	if st == nil {
		t.Fatal("no store seen")
	}
	if !bytes.Contains(progress.Bytes(), []byte("agents ready 20/20")) {
		t.Errorf("progress:\n%s", progress.String())
	}
	checkAgentLabels(t, goroutines.String())
}

// checkAgentLabels checks, in a goroutine profile, that the agents'
// goroutines and their client connections' carry the hollow-agent label
// and the control plane's do not.
func checkAgentLabels(t *testing.T, profile string) {
	t.Helper()
	const label = `"role":"hollow-agent"`
	seen := map[string]bool{}
	for _, g := range strings.Split(profile, "\n\n") {
		for fn, agent := range map[string]bool{
			"sim.(*agent).watchPods":                     true,
			"sim.heartbeatLoop":                          true,
			"net/http.(*http2ClientConn).readLoop":       true,
			"sched.(*Scheduler).Run":                     false,
			"apiserver.(*watchStream).run":               false,
			"net/http.(*http2serverConn).serve":          false,
			"golang.org/x/net/http2.(*serverConn).serve": false,
		} {
			if !strings.Contains(g, fn) {
				continue
			}
			seen[fn] = true
			if strings.Contains(g, label) != agent {
				t.Errorf("goroutine in %s: labelled %v, want %v:\n%s", fn, !agent, agent, g)
			}
		}
	}
	for _, fn := range []string{"sim.(*agent).watchPods", "sim.heartbeatLoop", "net/http.(*http2ClientConn).readLoop", "sched.(*Scheduler).Run"} {
		if !seen[fn] {
			t.Errorf("no goroutine in %s in the profile", fn)
		}
	}
}

// checkCapacity checks that no node holds more than its allocatable, that
// every node registered Ready with its hostname label, and that every pod
// is Running with addresses.
func checkCapacity(t *testing.T, st *store.Store, nodes, pods int) {
	t.Helper()
	nodeObjs, _, err := st.List(nodeKind, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodeObjs) != nodes {
		t.Fatalf("%d nodes in the store, want %d", len(nodeObjs), nodes)
	}
	alloc := map[string]api.ResourceList{}
	for _, o := range nodeObjs {
		n := o.(*api.Node)
		if n.Labels[hostnameLabel] != n.Name {
			t.Errorf("node %s: labels %v", n.Name, n.Labels)
		}
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == api.NodeReady && c.Status == api.ConditionTrue && !c.LastHeartbeatTime.IsZero())
		}
		if !ready {
			t.Errorf("node %s not Ready: %+v", n.Name, n.Status.Conditions)
		}
		alloc[n.Name] = n.Status.Allocatable
	}
	podObjs, _, err := st.List(podKind, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(podObjs) != pods {
		t.Fatalf("%d pods in the store, want %d", len(podObjs), pods)
	}
	type use struct {
		cpu, mem resource.Quantity
		n        int64
	}
	used := map[string]*use{}
	for _, o := range podObjs {
		p := o.(*api.Pod)
		if p.Spec.NodeName == "" || p.Status.Phase != api.PodRunning || p.Status.PodIP == "" || p.Status.HostIP == "" {
			t.Errorf("pod %s: node %q phase %q ip %q", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP)
			continue
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "ReplicaSet" {
			t.Errorf("pod %s: owners %+v", p.Name, p.OwnerReferences)
		}
		u := used[p.Spec.NodeName]
		if u == nil {
			u = &use{}
			used[p.Spec.NodeName] = u
		}
		for _, c := range p.Spec.Containers {
			u.cpu.Add(c.Resources.Requests[api.ResourceCPU])
			u.mem.Add(c.Resources.Requests[api.ResourceMemory])
		}
		u.n++
	}
	for name, u := range used {
		a, ok := alloc[name]
		if !ok {
			t.Errorf("pods bound to unknown node %s", name)
			continue
		}
		cpu, mem, np := a[api.ResourceCPU], a[api.ResourceMemory], a[api.ResourcePods]
		if u.cpu.Cmp(cpu) > 0 || u.mem.Cmp(mem) > 0 || u.n > np.Value() {
			t.Errorf("node %s over capacity: cpu %s/%s memory %s/%s pods %d/%d", name, u.cpu.String(), cpu.String(), u.mem.String(), mem.String(), u.n, np.Value())
		}
	}
}

func TestOverCapacityLeavesPodsPending(t *testing.T) {
	// 2 nodes of 1 cpu fit 20 pods of 100m; the other 5 stay pending and
	// the run ends at its timeout with ErrIncomplete.
	opts := Options{
		Nodes: 2, Pods: 25, NodeCPU: resource.MustParse("1"), Timeout: 10 * time.Second,
	}
	res, err := Run(context.Background(), opts)
	if err != ErrIncomplete {
		t.Fatalf("Run: %v, want ErrIncomplete", err)
	}
	if res.Scheduled != 20 || res.Running != 20 {
		t.Fatalf("result %+v, want 20 scheduled and running", res)
	}
}

func TestPercentile(t *testing.T) {
	vs := []float64{5, 1, 4, 2, 3}
	if p := percentile(vs, 0.5); p != 3 {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(vs, 0.99); p != 5 {
		t.Errorf("p99 = %v", p)
	}
	if p := percentile(nil, 0.5); p != 0 {
		t.Errorf("empty p50 = %v", p)
	}
}

// The scoring strategy reaches the control plane's scheduler: 20 nodes
// of 4 cpu take 200 pods of 100m on every node when spread, on the
// fewest (5, 40 each) when packed. Each pod has an owner of its own (as
// in kube-scheduler, spreading the pods of one owner outweighs the
// strategy), and the nodes' memory is in the pods' proportion (else the
// balanced-allocation score, falling as cpu fills faster than memory,
// cancels the packing score out).
func TestRunScoringStrategy(t *testing.T) {
	for _, tc := range []struct {
		mostAllocated bool
		nodes         int
	}{{false, 20}, {true, 5}} {
		opts := Options{Nodes: 20, Pods: 200, ReplicaSets: 200, NodeCPU: resource.MustParse("4"), NodeMemory: resource.MustParse("5Gi"), MostAllocated: tc.mostAllocated, Timeout: 2 * time.Minute}
		used := map[string]int{}
		_, err := run(context.Background(), opts, func(st *store.Store) {
			pods, _, err := st.List(podKind, store.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pods {
				used[p.(*api.Pod).Spec.NodeName]++
			}
		})
		if err != nil {
			t.Fatalf("MostAllocated %v: %v", tc.mostAllocated, err)
		}
		if len(used) != tc.nodes {
			t.Errorf("MostAllocated %v: pods on %d nodes, want %d: %v", tc.mostAllocated, len(used), tc.nodes, used)
		}
	}
}

// TestRunOverEtcd runs a small simulation over a real etcd: the control
// plane leads before the run begins, every pod is placed and reported,
// and the run's keys are gone from etcd at its end.
func TestRunOverEtcd(t *testing.T) {
	ep, err := url.Parse(etcdtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	opts := Options{Nodes: 5, Pods: 60, ReplicaSets: 2, Store: controlplane.StoreEtcdScheme + ep.Host, Progress: &progress, Timeout: 2 * time.Minute}
	res, err := run(context.Background(), opts, func(s *store.Store) { checkCapacity(t, s, 5, 60) })
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if res.Scheduled != 60 || res.Running != 60 {
		t.Fatalf("result %+v", res)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep.Host}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(context.Background(), "/berth-sim/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("%d keys of the run left in etcd", resp.Count)
	}
}
