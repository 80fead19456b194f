package volume

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/sched"
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
	f.waitUnschedulable("app", "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) had volume node affinity conflict.")

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
	f.waitUnschedulable("app", "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims.")
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
	f.waitUnschedulable("app2", "0/3 nodes are available: 1 node(s) didn't find available persistent volumes to bind, 2 node(s) didn't match Pod's node affinity/selector.")
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
	f.waitUnschedulable("app", `0/1 nodes are available: persistentvolumeclaim "later" not found.`)
	c := f.create(claimOf("later", "-", "1Gi")).(*api.PersistentVolumeClaim)
	f.waitScheduled("app", "n1")
	f.waitBound("later", "pvc-"+string(c.UID))
}
