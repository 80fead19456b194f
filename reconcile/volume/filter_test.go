package volume

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// schedNode is a Ready node the scheduler will place pods on.
func schedNode(name string, opts ...func(*api.Node)) *api.Node {
	n := node(name)
	n.Status.Allocatable = api.ResourceList{
		api.ResourceCPU:    resource.MustParse("4"),
		api.ResourceMemory: resource.MustParse("16Gi"),
		api.ResourcePods:   resource.MustParse("110"),
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func podWithClaim(name, claim string, opts ...func(*api.Pod)) *api.Pod {
	p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: api.PodSpec{
		Containers: []api.Container{{Name: "app", Image: "app"}},
		Volumes:    []api.Volume{{Name: "data", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
	}}
	for _, o := range opts {
		o(p)
	}
	api.Default(p)
	return p
}

// runScheduler runs the real scheduler with the volume filter over the
// fixture's store until the test ends.
func (f *fixture) runScheduler() *sched.Scheduler {
	f.t.Helper()
	sc := sched.New(f.store, sched.Options{Clock: f.clock, Volumes: NewFilter(f.store)})
	changed := sc.VolumesChanged
	f.scheduler.Store(&changed)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	f.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Errorf("scheduler: %v", err)
		}
	})
	return sc
}

func (f *fixture) pod(name string) *api.Pod {
	o, err := f.store.Get(podKind, "default", name)
	if err != nil {
		f.t.Fatal(err)
	}
	return o.(*api.Pod)
}

// waitUnschedulable waits for the pod's PodScheduled=False message.
func (f *fixture) waitUnschedulable(name, want string) {
	f.t.Helper()
	testtool.WaitFor(f.t, 10*time.Second, "pod "+name+" unschedulable: "+want, func() error {
		p := f.pod(name)
		for _, c := range p.Status.Conditions {
			if c.Type == api.PodScheduled && c.Status == api.ConditionFalse {
				if c.Message != want {
					return fmt.Errorf("message %q", c.Message)
				}
				return nil
			}
		}
		return fmt.Errorf("node %q, conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	})
}

func (f *fixture) waitScheduled(name, node string) {
	f.t.Helper()
	testtool.WaitFor(f.t, 10*time.Second, "pod "+name+" on "+node, func() error {
		// Past any back-off of the pod.
		f.clock.Step(time.Second)
		if got := f.pod(name).Spec.NodeName; got != node {
			return fmt.Errorf("on %q", got)
		}
		return nil
	})
}

// TestFilterBoundVolumeNodeAffinity: a pod whose claim is bound to a
// volume on n1 goes to n1, and stays Pending with kube-scheduler's message
// while n1 cannot take it.
func TestFilterBoundVolumeNodeAffinity(t *testing.T) {
	f := newFixture(t)
	cordon := func(n *api.Node) { n.Spec.Unschedulable = true }
	f.create(schedNode("n1", cordon))
	f.create(schedNode("n2"))
	f.create(schedNode("n3"))
	f.create(localPV("v1", "n1", api.PersistentVolumeReclaimRetain))
	f.create(claimOf("data", "", "1Gi"))
	f.waitBound("data", "v1")
	f.runScheduler()
	f.create(podWithClaim("app", "data"))
	f.waitUnschedulable("app", "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) had volume node affinity conflict. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")

	n1 := f.store.Snapshot()
	o, _ := n1.Get(nodeKind, "", "n1")
	uncordoned := o.(*api.Node).DeepCopy()
	uncordoned.Spec.Unschedulable = false
	if _, err := f.store.Update(context.Background(), uncordoned); err != nil {
		t.Fatal(err)
	}
	f.waitScheduled("app", "n1")
}

// TestFilterUnboundImmediateClaim: a pod whose claim must bind first
// waits with kube-scheduler's message, and is placed once it binds.
func TestFilterUnboundImmediateClaim(t *testing.T) {
	f := newFixture(t)
	f.create(schedNode("n1"))
	f.create(schedNode("n2"))
	f.runScheduler()
	f.create(claimOf("data", "", "5Gi"))
	f.create(podWithClaim("app", "data"))
	f.waitUnschedulable("app", "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
	f.create(pvOf("v", "", "5Gi"))
	f.waitBound("data", "v")
	// Told by the controller that volumes changed, the scheduler tries the
	// pod again after its back-off, without waiting for its periodic
	// flush (30s, never reached here).
	testtool.WaitFor(t, 10*time.Second, "pod placed", func() error {
		f.clock.Step(time.Second)
		if f.pod("app").Spec.NodeName == "" {
			return fmt.Errorf("still pending")
		}
		return nil
	})
}

// TestFilterWaitForFirstConsumer: a pod with a claim of a
// WaitForFirstConsumer local-path class is placed by its other
// constraints (a node selector here) on a node that can hold the volume,
// and the volume is provisioned on that node.
func TestFilterWaitForFirstConsumer(t *testing.T) {
	f := newFixture(t)
	noRoot := func(n *api.Node) { delete(n.Annotations, api.AnnotationLocalPathRoot) }
	ssd := func(n *api.Node) { n.Labels["disk"] = "ssd" }
	f.create(schedNode("n1", ssd, noRoot)) // cannot hold a local-path volume
	f.create(schedNode("n2"))
	f.create(schedNode("n3", ssd))
	f.create(DefaultClass())
	c := f.create(claimOf("data", "-", "1Gi")).(*api.PersistentVolumeClaim)
	f.runScheduler()
	f.create(podWithClaim("app", "data", func(p *api.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }))
	f.waitScheduled("app", "n3")
	f.waitBound("data", "pvc-"+string(c.UID))
	if got := api.LocalVolumeNode(f.volume("pvc-" + string(c.UID))); got != "n3" {
		t.Fatalf("volume on %q, want n3", got)
	}

	// Only n1 has ssd and it cannot hold the volume.
	c2 := f.create(claimOf("other", "-", "1Gi")).(*api.PersistentVolumeClaim)
	_ = c2
	f.create(podWithClaim("app2", "other", func(p *api.Pod) {
		p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		p.Spec.Affinity = &api.Affinity{NodeAffinity: &api.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &api.NodeSelector{
			NodeSelectorTerms: []api.NodeSelectorTerm{{MatchExpressions: []api.NodeSelectorRequirement{{Key: api.LabelHostname, Operator: api.NodeSelectorOpNotIn, Values: []string{"n3"}}}}},
		}}}
	}))
	f.waitUnschedulable("app2", "0/3 nodes are available: 1 node(s) didn't find available persistent volumes to bind, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
}

// TestFilterMissingClaim: a pod whose claim does not exist yet waits with
// kube-scheduler's message, and is placed (and its volume provisioned)
// once the claim is created.
func TestFilterMissingClaim(t *testing.T) {
	f := newFixture(t)
	f.create(schedNode("n1"))
	f.create(DefaultClass())
	f.runScheduler()
	f.create(podWithClaim("app", "later"))
	f.waitUnschedulable("app", `0/1 nodes are available: persistentvolumeclaim "later" not found. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.`)
	c := f.create(claimOf("later", "-", "1Gi")).(*api.PersistentVolumeClaim)
	f.waitScheduled("app", "n1")
	f.waitBound("later", "pvc-"+string(c.UID))
}

// TestFilterSharedWaitingClaimOneNode: the pods of one claim waiting for
// its first consumer all go to the node the first was placed on, though
// the scheduler places them before the volume controller records that
// node on the claim (the scheduler assumes it, as kube-scheduler does).
func TestFilterSharedWaitingClaimOneNode(t *testing.T) {
	for i := range 5 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			f := newFixture(t)
			for _, n := range []string{"n1", "n2", "n3"} {
				f.create(schedNode(n))
			}
			f.create(DefaultClass())
			f.create(claimOf("data", "-", "1Gi"))
			// The pods are there before the scheduler starts: it places
			// them one after another, before any binding is written.
			names := []string{"app-a", "app-b", "app-c"}
			for _, name := range names {
				f.create(podWithClaim(name, "data"))
			}
			f.runScheduler()
			nodes := map[string][]string{}
			testtool.WaitFor(t, 10*time.Second, "pods placed", func() error {
				clear(nodes)
				for _, name := range names {
					n := f.pod(name).Spec.NodeName
					if n == "" {
						return fmt.Errorf("%s pending", name)
					}
					nodes[n] = append(nodes[n], name)
				}
				return nil
			})
			if len(nodes) != 1 {
				t.Fatalf("pods of one claim on %d nodes: %v", len(nodes), nodes)
			}
		})
	}
}

// TestRefusedBindingForgetsAssumption runs the real scheduler over a real
// store that refuses every binding to n1: the first pod of a claim
// waiting for its first consumer is assumed on n1 (it scores best), the
// store refuses the binding, and the scheduler must take the claim's
// assumption back so that, once n1 is cordoned, the next attempt places
// the pod on n2. A leaked assumption holds the claim's pods to n1 for good.
func TestRefusedBindingForgetsAssumption(t *testing.T) {
	var refused atomic.Int32
	refuseN1 := func(_ *store.Txn, _ *api.Kind, obj, old api.Object) error {
		pod, ok := obj.(*api.Pod)
		was, _ := old.(*api.Pod)
		if ok && was != nil && was.Spec.NodeName == "" && pod.Spec.NodeName == "n1" {
			refused.Add(1)
			return fmt.Errorf("%w: node n1 takes no pods", store.ErrForbidden)
		}
		return nil
	}
	f := newFixtureWith(t, false, refuseN1)
	f.create(schedNode("n1", func(n *api.Node) {
		// Room to spare: least-allocated scoring puts the pod here first.
		n.Status.Allocatable[api.ResourceCPU] = resource.MustParse("64")
		n.Status.Allocatable[api.ResourceMemory] = resource.MustParse("256Gi")
	}))
	f.create(schedNode("n2"))
	f.create(DefaultClass())
	f.create(claimOf("data", "-", "1Gi"))
	f.runScheduler()
	f.create(podWithClaim("app", "data", func(p *api.Pod) {
		p.Spec.Containers[0].Resources.Requests = api.ResourceList{
			api.ResourceCPU: resource.MustParse("1"), api.ResourceMemory: resource.MustParse("1Gi")}
	}))
	testtool.WaitFor(t, 10*time.Second, "the binding of app to n1 refused", func() error {
		if refused.Load() == 0 {
			return errors.New("no binding to n1 yet")
		}
		return nil
	})
	n1, err := f.store.Get(nodeKind, "", "n1")
	if err != nil {
		t.Fatal(err)
	}
	cordoned := n1.(*api.Node).DeepCopy()
	cordoned.Spec.Unschedulable = true
	if _, err := f.store.Update(context.Background(), cordoned); err != nil {
		t.Fatal(err)
	}
	f.waitScheduled("app", "n2")
	pv := "pvc-" + string(f.claim("data").UID)
	f.waitBound("data", pv)
	if got := api.LocalVolumeNode(f.volume(pv)); got != "n2" {
		t.Errorf("volume on %q, want n2", got)
	}
}

// TestFilterAssumption: a pod of a waiting claim assumed on a node holds
// the claim's next pods to that node while its binding stands; a failed
// binding takes the assumption back, and the claim's selected node,
// once recorded, takes over.
func TestFilterAssumption(t *testing.T) {
	f := newFixture(t)
	f.create(DefaultClass())
	f.create(claimOf("data", "-", "1Gi"))
	ctx := context.Background()
	flt := NewFilter(f.store)
	nodes := map[string]*sched.NodeInfo{}
	all := sched.NewNodes(schedNode("n1"), schedNode("n2"))
	for _, n := range all.List() {
		nodes[n.Name()] = n
	}
	fitting := func(pod *api.Pod) []string {
		t.Helper()
		test, err := flt.ForPod(pod)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, name := range []string{"n1", "n2"} {
			if test == nil || test(nodes[name]) == nil {
				out = append(out, name)
			}
		}
		return out
	}
	a, b := podWithClaim("a", "data"), podWithClaim("b", "data")
	a.UID, b.UID = "uid-a", "uid-b"
	if got := fitting(b); fmt.Sprint(got) != "[n1 n2]" {
		t.Fatalf("before any assumption: fits %v", got)
	}
	flt.AssumePodVolumes(a, "n2")
	if got := fitting(b); fmt.Sprint(got) != "[n2]" {
		t.Fatalf("a assumed on n2: b fits %v", got)
	}
	flt.AssumePodVolumes(b, "n2")
	flt.ForgetPodVolumes(a)
	if got := fitting(podWithClaim("c", "data")); fmt.Sprint(got) != "[n2]" {
		t.Fatalf("b still assumed on n2: c fits %v", got)
	}
	flt.ForgetPodVolumes(b)
	if got := fitting(podWithClaim("c", "data")); fmt.Sprint(got) != "[n1 n2]" {
		t.Fatalf("both bindings failed: c fits %v", got)
	}

	// The selected node recorded on the claim rules, and ends the
	// assumption.
	flt.AssumePodVolumes(a, "n2")
	c := f.claim("data").DeepCopy()
	c.Annotations = map[string]string{api.AnnotationSelectedNode: "n1"}
	if _, err := f.store.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := fitting(b); fmt.Sprint(got) != "[n1]" {
		t.Fatalf("n1 selected: b fits %v", got)
	}
	if len(flt.assumed) != 0 {
		t.Errorf("assumptions left: %v", flt.assumed)
	}

	// A claim whose one pod was assumed, and that no later pod looks at,
	// is dropped once the store settles it: here it is deleted, and the
	// next pod with a claim of its own sweeps it away.
	f.create(claimOf("lone", "-", "1Gi"))
	f.create(claimOf("other", "-", "1Gi"))
	flt.AssumePodVolumes(podWithClaim("l", "lone"), "n1")
	if _, ok := flt.assumed["default/lone"]; !ok {
		t.Fatalf("lone not assumed: %v", flt.assumed)
	}
	if _, err := f.store.Delete(ctx, claimKind, "default", "lone", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	flt.AssumePodVolumes(podWithClaim("o", "other"), "n2")
	if _, ok := flt.assumed["default/lone"]; ok || len(flt.assumed) != 1 {
		t.Errorf("assumptions after lone's deletion: %v, want other's alone", flt.assumed)
	}
}
