package workload

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// TestCreationsInBatchTransactions checks that the pods of a slow-start
// batch are written in one transaction each, and that a batch refused by
// an admission hook (as a quota refuses one) is retried one pod at a time
// up to the first refusal.
func TestCreationsInBatchTransactions(t *testing.T) {
	tests := []struct {
		name      string
		limit     int // pods the hook admits; -1 for no limit
		replicas  int32
		wantPods  int
		wantRevs  int // distinct resourceVersions among the pods
		wantError bool
	}{
		// Batches 1, 2, 4, 3: four transactions.
		{name: "no refusal", limit: -1, replicas: 10, wantPods: 10, wantRevs: 4},
		// Batches 1, 2, then 4 refused at its third pod: the batch is
		// retried one by one, two pods fit and the third is refused.
		{name: "refused inside a batch", limit: 5, replicas: 10, wantPods: 5, wantRevs: 4, wantError: true},
		{name: "refused at the first pod", limit: 0, replicas: 10, wantPods: 0, wantRevs: 0, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(epoch)
			admit := func(tx *store.Txn, k *api.Kind, obj, old api.Object) error {
				if k != podKind || obj == nil || old != nil || tt.limit < 0 {
					return nil
				}
				pods, err := tx.List(podKind, store.Filter{})
				if err != nil {
					return err
				}
				if len(pods) >= tt.limit {
					return fmt.Errorf("%w: exceeded quota: pods=%d", store.ErrForbidden, tt.limit)
				}
				return nil
			}
			s, err := store.New(store.Memory{}, store.Options{Clock: clk, Admit: []store.AdmitFunc{admit}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			rs := mustCreate(t, s, replicaSet("web", tt.replicas))
			r := NewReplicaSetReconciler(s, clk)
			_, err = r.Reconcile(context.Background(), "default/web")
			if (err != nil) != tt.wantError {
				t.Fatalf("Reconcile: %v", err)
			}
			ps := pods(t, s)
			if got := len(activeOwned(ps, rs)); got != tt.wantPods {
				t.Errorf("%d pods, want %d", got, tt.wantPods)
			}
			revs := map[string]bool{}
			for _, p := range ps {
				revs[p.ResourceVersion] = true
			}
			if len(revs) != tt.wantRevs {
				t.Errorf("pods written in %d transactions, want %d", len(revs), tt.wantRevs)
			}
			// Every creation that did not happen is no longer expected:
			// once the watch shows the pods that did, the next sync may
			// run.
			for range tt.wantPods {
				r.Expectations().CreationObserved("default/web")
			}
			if !r.Expectations().Satisfied("default/web") {
				t.Error("expectations not satisfied once the created pods are observed")
			}
		})
	}
}

// TestSameForController checks which pod changes a ReplicaSet's sync can
// skip: those that change nothing it reads.
func TestSameForController(t *testing.T) {
	rs := replicaSet("web", 1)
	rs.UID = "u1"
	base := func() *api.Pod {
		p := testPod("p", ownedBy(rs))
		p.Spec.NodeName = ""
		p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: api.ConditionFalse}}
		return p
	}
	now := metav1.NewTime(epoch)
	tests := []struct {
		name   string
		change func(p *api.Pod)
		same   bool
	}{
		{"bound to a node", func(p *api.Pod) { p.Spec.NodeName = "n1" }, true},
		{"a container status", func(p *api.Pod) { p.Status.ContainerStatuses = []api.ContainerStatus{{Name: "c"}} }, true},
		{"ready", func(p *api.Pod) { p.Status.Conditions[0].Status = api.ConditionTrue }, false},
		{"ready since another time", func(p *api.Pod) { p.Status.Conditions[0].LastTransitionTime = now }, false},
		{"relabelled", func(p *api.Pod) { p.Labels = map[string]string{"app": "other"} }, false},
		{"failed", func(p *api.Pod) { p.Status.Phase = api.PodFailed }, false},
		{"marked for deletion", func(p *api.Pod) { p.DeletionTimestamp = &now }, false},
		{"released", func(p *api.Pod) { p.OwnerReferences = nil }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := base()
			p := old.DeepCopy()
			tt.change(p)
			if got := sameForController(old, p); got != tt.same {
				t.Errorf("sameForController = %v, want %v", got, tt.same)
			}
		})
	}
	// A terminating pod that ends is no longer counted as terminating.
	old := base()
	old.DeletionTimestamp = &now
	p := old.DeepCopy()
	p.Status.Phase = api.PodFailed
	if sameForController(old, p) {
		t.Error("a terminating pod that failed is the same for its controller")
	}
}
