package quota

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/workload"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// TestReplicaSetStopsAtQuota runs the ReplicaSet controller, which
// creates pods straight in the store, against a quota of three pods: it
// gets three of five, reports why, and gets the rest once the quota grows.
func TestReplicaSetStopsAtQuota(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	mustCreate(t, s, newQuota("team", "compute", rl("pods", "3")))
	replicas := int32(5)
	mustCreate(t, s, &api.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: api.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: api.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       api.PodSpec{Containers: []api.Container{{Name: "web", Image: "web:1"}}},
			},
		},
	})
	c := workload.NewReplicaSetController(s, workload.Options{Logger: slog.New(slog.DiscardHandler), Backoff: reconcile.Backoff{Base: 10 * time.Millisecond, Max: 100 * time.Millisecond}})
	wg.Go(func() {
		if err := c.Run(ctx, 2); err != nil {
			t.Error(err)
		}
	})
	rsKind := api.MustLookupResource("replicasets")
	failure := func() (api.WorkloadCondition, bool) {
		obj, err := s.Get(rsKind, "team", "web")
		if err != nil {
			return api.WorkloadCondition{}, false
		}
		for _, c := range obj.(*api.ReplicaSet).Status.Conditions {
			if c.Type == api.ReplicaFailure {
				return c, true
			}
		}
		return api.WorkloadCondition{}, false
	}
	podCount := func() int {
		pods, _, err := s.List(podKind, store.Filter{Namespace: "team"})
		if err != nil {
			t.Fatal(err)
		}
		return len(pods)
	}
	testtool.WaitFor(t, 10*time.Second, "ReplicaFailure naming the quota", func() error {
		c, ok := failure()
		if !ok || c.Reason != workload.ReasonFailedCreate || !strings.Contains(c.Message, "exceeded quota: compute, requested: pods=1, used: pods=3, limited: pods=3") {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	if n := podCount(); n != 3 {
		t.Fatalf("%d pods under a quota of 3", n)
	}
	if got := used(t, s, "team", "compute"); got != "pods=3" {
		t.Fatalf("used %q", got)
	}

	obj, _ := s.Get(quotaKind, "team", "compute")
	q := obj.(*api.ResourceQuota).DeepCopy()
	q.Spec.Hard[api.ResourcePods] = resource.MustParse("10")
	if _, err := s.Update(ctx, q); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "five pods and no failure", func() error {
		if n := podCount(); n != 5 {
			return fmt.Errorf("%d pods", n)
		}
		if c, ok := failure(); ok {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	if got := used(t, s, "team", "compute"); got != "pods=5" {
		t.Fatalf("used %q", got)
	}
}
