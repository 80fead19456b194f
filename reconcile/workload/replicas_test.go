package workload

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/namespace"
	"github.com/berth-dev/berth/store"
)

func newStore(t *testing.T, clk *clocktesting.FakeClock, admit ...store.AdmitFunc) *store.Store {
	t.Helper()
	s, err := store.New(store.Memory{}, store.Options{Clock: clk, Admit: admit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func webTemplate() api.PodTemplateSpec {
	return api.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec:       api.PodSpec{Containers: []api.Container{{Name: "web", Image: "web:1"}}},
	}
}

func replicaSet(name string, replicas int32) *api.ReplicaSet {
	return &api.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: api.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: webTemplate(),
		},
	}
}

type podOpt func(*api.Pod)

// testPod is a running, ready pod on node n1 labelled like the template.
func testPod(name string, opts ...podOpt) *api.Pod {
	p := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec:       api.PodSpec{NodeName: "n1", Containers: []api.Container{{Name: "web", Image: "web:1"}}},
		Status: api.PodStatus{
			Phase:      api.PodRunning,
			Conditions: []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue, LastTransitionTime: metav1.NewTime(epoch.Add(-time.Hour))}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ownedBy(owner api.Object) podOpt {
	return func(p *api.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, *metav1.NewControllerRef(owner, api.KindOf(owner).GVK))
	}
}
func unbound(p *api.Pod)           { p.Spec.NodeName = "" }
func notReady(p *api.Pod)          { p.Status.Conditions[0].Status = api.ConditionFalse }
func phase(ph api.PodPhase) podOpt { return func(p *api.Pod) { p.Status.Phase = ph } }
func podLabels(kv ...string) podOpt {
	return func(p *api.Pod) {
		p.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}
func readySince(d time.Duration) podOpt {
	return func(p *api.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(epoch.Add(d)) }
}
func held(p *api.Pod) { p.Finalizers = []string{"test/hold"} }

func pods(t *testing.T, s *store.Store) map[string]*api.Pod {
	t.Helper()
	objs, _, err := s.List(podKind, store.Filter{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*api.Pod{}
	for _, o := range objs {
		m[o.GetName()] = o.(*api.Pod)
	}
	return m
}

// activeOwned names the active pods the controller with uid controls.
func activeOwned(ps map[string]*api.Pod, owner api.Object) []string {
	var names []string
	for name, p := range ps {
		if ref := api.ControllerOf(p); ref != nil && ref.UID == owner.GetUID() && isActive(p) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func mustCreate(t *testing.T, s *store.Store, obj api.Object) api.Object {
	t.Helper()
	api.Default(obj)
	out, err := s.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReplicaSetReconcile(t *testing.T) {
	tests := []struct {
		name     string
		rs       func() *api.ReplicaSet
		pods     func(rs api.Object) []*api.Pod
		deleteRS bool
		// check looks at the pods after one Reconcile.
		check       func(t *testing.T, ps map[string]*api.Pod, rs api.Object)
		wantStatus  api.ReplicaSetStatus
		wantRequeue time.Duration
	}{
		{
			name: "scale up from zero",
			rs:   func() *api.ReplicaSet { return replicaSet("web", 3) },
			check: func(t *testing.T, ps map[string]*api.Pod, rs api.Object) {
				if got := activeOwned(ps, rs); len(got) != 3 {
					t.Fatalf("owned pods %v, want 3", got)
				}
				for name, p := range ps {
					if p.GenerateName != "web-" || len(name) != len("web-")+5 {
						t.Errorf("pod %s: generateName %q", name, p.GenerateName)
					}
					if p.Labels["app"] != "web" || p.Labels["tier"] != "front" {
						t.Errorf("pod %s: labels %v", name, p.Labels)
					}
					ref := api.ControllerOf(p)
					if ref.Kind != "ReplicaSet" || ref.Name != "web" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
						t.Errorf("pod %s: controller ref %+v", name, ref)
					}
					if p.Spec.Containers[0].Image != "web:1" {
						t.Errorf("pod %s: spec %+v", name, p.Spec)
					}
				}
			},
			wantStatus: api.ReplicaSetStatus{ObservedGeneration: 1},
		},
		{
			name: "scale down removes unscheduled, pending, not ready, then newest ready",
			rs:   func() *api.ReplicaSet { return replicaSet("web", 2) },
			pods: func(rs api.Object) []*api.Pod {
				return []*api.Pod{
					testPod("ready-long", ownedBy(rs), readySince(-time.Hour)),
					testPod("not-ready", ownedBy(rs), notReady),
					testPod("pending", ownedBy(rs), notReady, phase(api.PodPending)),
					testPod("unscheduled", ownedBy(rs), notReady, phase(api.PodPending), unbound),
					testPod("ready-short", ownedBy(rs), readySince(-time.Minute)),
					testPod("ready-medium", ownedBy(rs), readySince(-30*time.Minute)),
				}
			},
			check: func(t *testing.T, ps map[string]*api.Pod, rs api.Object) {
				want := []string{"ready-long", "ready-medium"}
				if got := activeOwned(ps, rs); !slices.Equal(got, want) {
					t.Errorf("active pods %v, want %v", got, want)
				}
				if _, ok := ps["unscheduled"]; ok {
					t.Error("the unscheduled pod is still stored; it had nothing to stop")
				}
			},
			wantStatus: api.ReplicaSetStatus{Replicas: 6, FullyLabeledReplicas: 6, ReadyReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 1},
		},
		{
			name: "adopts orphans, releases strays, leaves others' pods",
			rs:   func() *api.ReplicaSet { return replicaSet("web", 2) },
			pods: func(rs api.Object) []*api.Pod {
				other := &api.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other", UID: "other-uid"}}
				return []*api.Pod{
					testPod("orphan"),
					testPod("stray", ownedBy(rs), podLabels("app", "api")),
					testPod("foreign", ownedBy(other)),
				}
			},
			check: func(t *testing.T, ps map[string]*api.Pod, rs api.Object) {
				if ref := api.ControllerOf(ps["orphan"]); ref == nil || ref.UID != rs.GetUID() {
					t.Errorf("orphan not adopted: %+v", ps["orphan"].OwnerReferences)
				}
				if refs := ps["stray"].OwnerReferences; len(refs) != 0 {
					t.Errorf("stray not released: %+v", refs)
				}
				if ref := api.ControllerOf(ps["foreign"]); ref == nil || ref.UID != "other-uid" {
					t.Errorf("foreign pod taken: %+v", ps["foreign"].OwnerReferences)
				}
				if got := activeOwned(ps, rs); len(got) != 2 || !slices.Contains(got, "orphan") {
					t.Errorf("owned pods %v, want orphan and one new", got)
				}
			},
			wantStatus: api.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 1},
		},
		{
			name: "finished and terminating pods are not replicas; the terminating one is counted as such",
			rs:   func() *api.ReplicaSet { return replicaSet("web", 2) },
			pods: func(rs api.Object) []*api.Pod {
				return []*api.Pod{
					testPod("failed", ownedBy(rs), phase(api.PodFailed)),
					testPod("succeeded", ownedBy(rs), phase(api.PodSucceeded)),
					testPod("terminating", ownedBy(rs), held),
					testPod("running", ownedBy(rs)),
				}
			},
			check: func(t *testing.T, ps map[string]*api.Pod, rs api.Object) {
				if got := activeOwned(ps, rs); len(got) != 2 || !slices.Contains(got, "running") {
					t.Errorf("active pods %v, want running and one new", got)
				}
			},
			wantStatus: api.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, TerminatingReplicas: 1, ObservedGeneration: 1},
		},
		{
			name: "at most 500 creations per sync",
			rs:   func() *api.ReplicaSet { return replicaSet("web", 600) },
			check: func(t *testing.T, ps map[string]*api.Pod, rs api.Object) {
				if got := activeOwned(ps, rs); len(got) != BurstReplicas {
					t.Errorf("created %d pods, want %d", len(got), BurstReplicas)
				}
			},
			wantStatus: api.ReplicaSetStatus{ObservedGeneration: 1},
		},
		{
			name: "ready, available after minReadySeconds, fully labelled",
			rs: func() *api.ReplicaSet {
				rs := replicaSet("web", 3)
				rs.Spec.MinReadySeconds = 10
				return rs
			},
			pods: func(rs api.Object) []*api.Pod {
				return []*api.Pod{
					testPod("available", ownedBy(rs), readySince(-20*time.Second)),
					testPod("just-ready", ownedBy(rs), readySince(-4*time.Second), podLabels("app", "web")),
					testPod("not-ready", ownedBy(rs), notReady),
				}
			},
			check: func(t *testing.T, ps map[string]*api.Pod, rs api.Object) {
				if len(ps) != 3 {
					t.Errorf("pods %d, want 3 untouched", len(ps))
				}
			},
			wantStatus:  api.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 1},
			wantRequeue: 6 * time.Second,
		},
		{
			name:     "a ReplicaSet being deleted creates and adopts nothing",
			rs:       func() *api.ReplicaSet { rs := replicaSet("web", 3); rs.Finalizers = []string{"test/hold"}; return rs },
			pods:     func(rs api.Object) []*api.Pod { return []*api.Pod{testPod("orphan")} },
			deleteRS: true,
			check: func(t *testing.T, ps map[string]*api.Pod, rs api.Object) {
				if len(ps) != 1 || len(ps["orphan"].OwnerReferences) != 0 {
					t.Errorf("pods changed under a deleted ReplicaSet: %v", ps)
				}
			},
			wantStatus: api.ReplicaSetStatus{ObservedGeneration: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktesting.NewFakeClock(epoch)
			s := newStore(t, clk)
			rs := mustCreate(t, s, tt.rs())
			if tt.pods != nil {
				for _, p := range tt.pods(rs) {
					held := len(p.Finalizers) > 0
					mustCreate(t, s, p)
					if held {
						if _, err := s.Delete(ctx, podKind, p.Namespace, p.Name, store.DeleteOptions{}); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if tt.deleteRS {
				if _, err := s.Delete(ctx, replicaSetKind, "default", "web", store.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			r := NewReplicaSetReconciler(s, clk)
			res, err := r.Reconcile(ctx, "default/web")
			if err != nil {
				t.Fatal(err)
			}
			if res.RequeueAfter != tt.wantRequeue {
				t.Errorf("requeue after %v, want %v", res.RequeueAfter, tt.wantRequeue)
			}
			tt.check(t, pods(t, s), rs)
			obj, err := s.Get(replicaSetKind, "default", "web")
			if err != nil {
				t.Fatal(err)
			}
			if got := obj.(*api.ReplicaSet).Status; fmt.Sprint(got) != fmt.Sprint(tt.wantStatus) {
				t.Errorf("status %+v, want %+v", got, tt.wantStatus)
			}
		})
	}
}

// TestReplicaSetStatusUnchangedWritesNothing: a second sync with nothing to
// do leaves the ReplicaSet's resourceVersion alone.
func TestReplicaSetStatusUnchangedWritesNothing(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	s := newStore(t, clk)
	rs := mustCreate(t, s, replicaSet("web", 1))
	mustCreate(t, s, testPod("a", ownedBy(rs)))
	r := NewReplicaSetReconciler(s, clk)
	if _, err := r.Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Get(replicaSetKind, "default", "web")
	if _, err := r.Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	after, _ := s.Get(replicaSetKind, "default", "web")
	if before.GetResourceVersion() != after.GetResourceVersion() {
		t.Errorf("resourceVersion moved %s → %s with nothing to do", before.GetResourceVersion(), after.GetResourceVersion())
	}
}

// TestExpectationsHoldSecondSync: while the watch has not shown a sync's
// creations, the next sync creates nothing more, even if a pod vanished;
// once they are observed it converges again.
func TestExpectationsHoldSecondSync(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	s := newStore(t, clk)
	mustCreate(t, s, replicaSet("web", 3))
	r := NewReplicaSetReconciler(s, clk)
	if _, err := r.Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	created := pods(t, s)
	if len(created) != 3 {
		t.Fatalf("created %d pods, want 3", len(created))
	}
	var gone *api.Pod
	for _, p := range created {
		gone = p
		break
	}
	if _, err := s.Delete(ctx, podKind, "default", gone.Name, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(pods(t, s)); n != 2 {
		t.Fatalf("second sync with creations in flight: %d pods, want 2 (no creation)", n)
	}
	// The watch shows the three creations and the deletion.
	for _, p := range created {
		keys := r.PodKeys(store.Event{Type: store.Added, Kind: podKind, Object: p})
		if !slices.Equal(keys, []string{"default/web"}) {
			t.Fatalf("pod keys %v", keys)
		}
	}
	r.PodKeys(store.Event{Type: store.Deleted, Kind: podKind, Object: gone})
	if _, err := r.Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(pods(t, s)); n != 3 {
		t.Fatalf("after the watch caught up: %d pods, want 3", n)
	}
	// Expectations expire: a lost event does not stall the controller.
	r.Expectations().ExpectCreations("default/web", 1)
	clk.Step(reconcile.ExpectationsTimeout + time.Second)
	if !r.Expectations().Satisfied("default/web") {
		t.Error("expectations did not expire")
	}
}

func TestPodKeysOrphanFindsMatchingControllers(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	s := newStore(t, clk)
	mustCreate(t, s, replicaSet("web", 1))
	api2 := replicaSet("api", 1)
	api2.Spec.Selector.MatchLabels = map[string]string{"app": "api"}
	mustCreate(t, s, api2)
	r := NewReplicaSetReconciler(s, clk)
	orphan := testPod("o")
	if got := r.PodKeys(store.Event{Type: store.Added, Object: orphan}); !slices.Equal(got, []string{"default/web"}) {
		t.Errorf("orphan keys %v", got)
	}
	relabelled := testPod("o", podLabels("app", "api"))
	got := r.PodKeys(store.Event{Type: store.Modified, Object: relabelled, Old: orphan})
	if !slices.Equal(got, []string{"default/api", "default/web"}) {
		t.Errorf("relabelled orphan keys %v", got)
	}
	rc := &api.ReplicationController{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rc"}}
	if got := r.PodKeys(store.Event{Type: store.Added, Object: testPod("x", ownedBy(rc))}); len(got) != 0 {
		t.Errorf("a pod of a ReplicationController concerns ReplicaSets: %v", got)
	}
}

func TestReplicationControllerReconcile(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	s := newStore(t, clk)
	two := int32(2)
	tmpl := webTemplate()
	rc := mustCreate(t, s, &api.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:       api.ReplicationControllerSpec{Replicas: &two, Selector: map[string]string{"app": "web"}, Template: &tmpl},
	})
	mustCreate(t, s, testPod("orphan"))
	r := NewReplicationControllerReconciler(s, clk)
	if _, err := r.Reconcile(ctx, reconcile.ObjectKey(rc)); err != nil {
		t.Fatal(err)
	}
	ps := pods(t, s)
	if got := activeOwned(ps, rc); len(got) != 2 || !slices.Contains(got, "orphan") {
		t.Errorf("owned pods %v, want the orphan and one new", got)
	}
	for _, p := range ps {
		if ref := api.ControllerOf(p); ref.Kind != "ReplicationController" {
			t.Errorf("pod %s controller %+v", p.Name, ref)
		}
	}
	obj, _ := s.Get(rcKind, "default", "web")
	if st := obj.(*api.ReplicationController).Status; st.Replicas != 1 || st.ReadyReplicas != 1 || st.ObservedGeneration != 1 {
		t.Errorf("status %+v", st)
	}
}

func TestReplicaSetInvalidSelectorIsTerminal(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	s := newStore(t, clk)
	rs := replicaSet("web", 1)
	rs.Spec.Selector = &metav1.LabelSelector{}
	mustCreate(t, s, rs)
	_, err := NewReplicaSetReconciler(s, clk).Reconcile(context.Background(), "default/web")
	if !reconcile.IsTerminal(err) {
		t.Errorf("err = %v, want terminal", err)
	}
	if n := len(pods(t, s)); n != 0 {
		t.Errorf("created %d pods for an empty selector", n)
	}
}

func TestNoPodsInATerminatingNamespace(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	s := newStore(t, clk)
	mustCreate(t, s, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	mustCreate(t, s, replicaSet("web", 2))
	if _, err := s.Delete(ctx, namespaceKind, "", "default", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewReplicaSetReconciler(s, clk).Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(pods(t, s)); n != 0 {
		t.Errorf("created %d pods in a terminating namespace", n)
	}
}

// markTerminatingOnCreate is an admission hook that marks a namespace
// terminating when an object of kind k is created in it, before
// namespace.Admit looks: the namespace's deletion beginning between a
// controller's check and its write.
func markTerminatingOnCreate(k *api.Kind) store.AdmitFunc {
	return func(tx *store.Txn, kind *api.Kind, obj, old api.Object) error {
		if kind != k || old != nil || obj == nil {
			return nil
		}
		o, err := tx.Get(namespaceKind, "", obj.GetNamespace())
		if err != nil {
			return err
		}
		ns := o.(*api.Namespace).DeepCopy()
		ns.Status.Phase = api.NamespaceTerminating
		_, err = tx.Update(ns)
		return err
	}
}

// A namespace whose deletion begins after the ReplicaSet controller
// checked it refuses the pods in the store; the controller takes that as
// nothing to do: no error, no FailedCreate event.
func TestPodsRefusedByATerminatingNamespace(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	s := newStore(t, clk, markTerminatingOnCreate(podKind), namespace.Admit)
	mustCreate(t, s, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	mustCreate(t, s, replicaSet("web", 2))
	rec := &eventList{}
	r := NewReplicaSetReconciler(s, clk)
	r.events = rec
	if _, err := r.Reconcile(ctx, "default/web"); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if n := len(pods(t, s)); n != 0 {
		t.Errorf("created %d pods", n)
	}
	if len(rec.reasons) != 0 {
		t.Errorf("events %v", rec.reasons)
	}
}

// eventList keeps the reasons of the events recorded.
type eventList struct{ reasons []string }

func (l *eventList) Event(_ api.Object, _, reason, _ string) { l.reasons = append(l.reasons, reason) }

func TestFailureCondition(t *testing.T) {
	failed := []api.WorkloadCondition{{Type: api.ReplicaFailure, Status: api.ConditionTrue, Reason: ReasonFailedCreate, Message: "old"}}
	other := api.WorkloadCondition{Type: "Other", Status: api.ConditionTrue}
	boom := &replicaFailure{ReasonFailedCreate, "pods is forbidden: exceeded quota"}
	tests := []struct {
		name       string
		cur        []api.WorkloadCondition
		failure    *replicaFailure
		wantReason string // of ReplicaFailure; "" for none
		wantMsg    string
		wantLen    int
	}{
		{"failure sets it", nil, boom, ReasonFailedCreate, boom.message, 1},
		{"a second failure keeps the first", failed, &replicaFailure{ReasonFailedDelete, "boom"}, ReasonFailedCreate, "old", 1},
		{"success clears it", failed, nil, "", "", 0},
		{"success keeps other conditions", append(slices.Clone(failed), other), nil, "", "", 1},
		{"nothing to clear", nil, nil, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := failureCondition(tt.cur, tt.failure, epoch)
			if len(got) != tt.wantLen {
				t.Fatalf("conditions %+v, want %d", got, tt.wantLen)
			}
			var c *api.WorkloadCondition
			for i := range got {
				if got[i].Type == api.ReplicaFailure {
					c = &got[i]
				}
			}
			switch {
			case tt.wantReason == "" && c != nil:
				t.Errorf("ReplicaFailure %+v, want none", c)
			case tt.wantReason != "" && (c == nil || c.Reason != tt.wantReason || c.Message != tt.wantMsg):
				t.Errorf("ReplicaFailure %+v, want %s %q", c, tt.wantReason, tt.wantMsg)
			}
		})
	}
}

// TestBatchPodsShareOnlyWhatNobodyChanges: the pods of one creation batch
// share the defaulted copy of the template, never the template itself, and
// each is its own object: changing one (as every writer does, on a copy)
// leaves the others and the ReplicaSet as they were.
func TestBatchPodsShareOnlyWhatNobodyChanges(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	s := newStore(t, clk)
	rs := replicaSet("web", 4)
	// Limits alone: defaulting gives the pods requests, which the template
	// must not get.
	rs.Spec.Template.Spec.Containers[0].Resources.Limits = api.ResourceList{api.ResourceCPU: resource.MustParse("1")}
	stored := mustCreate(t, s, rs).(*api.ReplicaSet)
	before := stored.DeepCopy()
	r := NewReplicaSetReconciler(s, clk)
	if _, err := r.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	ps := pods(t, s)
	if len(ps) != 4 {
		t.Fatalf("%d pods, want 4", len(ps))
	}
	for name, p := range ps {
		if q := p.Spec.Containers[0].Resources.Requests[api.ResourceCPU]; q.Cmp(resource.MustParse("1")) != 0 {
			t.Errorf("pod %s: cpu request %s, want 1 (defaulted from the limit)", name, q.String())
		}
		if p.Status.Phase != api.PodPending || p.Status.QOSClass != api.QOSBurstable {
			t.Errorf("pod %s: status %+v", name, p.Status)
		}
	}
	if !reflect.DeepEqual(before.Spec, stored.Spec) {
		t.Fatalf("creating pods changed the ReplicaSet's spec: %+v", stored.Spec)
	}
	var changed string
	for name, p := range ps {
		c := p.DeepCopy()
		c.Labels["tier"] = "back"
		c.Spec.Containers[0].Image = "web:2"
		if _, err := s.Update(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		changed = name
		break
	}
	for name, p := range pods(t, s) {
		if name == changed {
			continue
		}
		if p.Labels["tier"] != "front" || p.Spec.Containers[0].Image != "web:1" {
			t.Errorf("pod %s changed with pod %s: labels %v image %s", name, changed, p.Labels, p.Spec.Containers[0].Image)
		}
	}
	if got, _ := s.Get(replicaSetKind, "default", "web"); !reflect.DeepEqual(before.Spec, got.(*api.ReplicaSet).Spec) {
		t.Fatal("changing a pod changed the ReplicaSet's template")
	}
}
