package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/workload"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// TestControllerEvictsAndReplicaSetRecreates runs the node controller and
// the ReplicaSet controller over one store on a fake clock: the pods of a
// node that goes dark are deleted after the grace period and the eviction
// timeout, and the ReplicaSet replaces them, which is what a user is
// promised.
func TestControllerEvictsAndReplicaSetRecreates(t *testing.T) {
	f := newFixture(t)
	f.addNode("a")
	f.addNode("b")
	replicas := int32(2)
	rs := f.create(&api.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: api.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: api.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       api.PodSpec{Containers: []api.Container{{Name: "web", Image: "web:1"}}},
			},
		},
	})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	nc := NewController(f.store, Options{Clock: f.clock})
	rc := workload.NewReplicaSetController(f.store, workload.Options{Clock: f.clock})
	for _, c := range []interface {
		Run(context.Context, int) error
	}{nc, rc} {
		wg.Go(func() {
			if err := c.Run(ctx, 2); err != nil {
				t.Error(err)
			}
		})
	}

	// The test plays the scheduler and the agent of node a: it binds the
	// ReplicaSet's pods to a and reports them running and ready.
	var first []string
	testtool.WaitFor(t, 10*time.Second, "two pods running on node a", func() error {
		first = first[:0]
		for _, p := range f.owned(rs) {
			if p.Spec.NodeName == "" {
				p = p.DeepCopy()
				p.Spec.NodeName = "a"
				p.Status.Phase = api.PodRunning
				p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue}}
				if _, err := f.store.Update(ctx, p); err != nil {
					return err
				}
			}
			first = append(first, p.Name)
		}
		if len(first) != 2 {
			return fmt.Errorf("%d pods", len(first))
		}
		return nil
	})

	// Node a falls silent; b keeps heartbeating every 10s of fake time.
	start := f.clock.Now()
	lastBeat := start
	testtool.WaitFor(t, 20*time.Second, "the pods of node a replaced", func() error {
		if f.clock.Since(start) < 2*time.Minute {
			f.clock.Step(time.Second)
			if f.clock.Since(lastBeat) >= 10*time.Second {
				f.beat("b")
				lastBeat = f.clock.Now()
			}
		}
		for _, name := range first {
			if p := f.pod(name); p.DeletionTimestamp == nil {
				return fmt.Errorf("pod %s not deleted at %s", name, f.clock.Since(start))
			}
		}
		var fresh int
		for _, p := range f.owned(rs) {
			if p.DeletionTimestamp == nil && p.Spec.NodeName == "" {
				fresh++
			}
		}
		if fresh != 2 {
			return fmt.Errorf("%d replacement pods", fresh)
		}
		return nil
	})
	if d := f.clock.Since(start); d < 45*time.Second {
		t.Errorf("pods replaced %s after node a went silent, before the grace period and eviction timeout", d)
	}
	if a := f.node("a"); nodeReady(a) != api.ConditionUnknown || len(noExecuteTaints(a.Spec.Taints, true)) == 0 {
		t.Errorf("node a: Ready %s, taints %v", nodeReady(a), taintStrings(a.Spec.Taints))
	}
}

func (f *fixture) owned(owner api.Object) []*api.Pod {
	f.t.Helper()
	objs, _, err := f.store.List(podKind, store.Filter{Index: store.IndexOwner, Value: string(owner.GetUID())})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []*api.Pod
	for _, o := range objs {
		out = append(out, o.(*api.Pod))
	}
	return out
}
