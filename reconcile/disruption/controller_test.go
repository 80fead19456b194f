package disruption

import (
	"context"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

type fixture struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	store *store.Store
	r     *Reconciler
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	s, err := store.New(store.Memory{}, store.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &fixture{t: t, clock: clk, store: s, r: NewReconciler(s, Options{Clock: clk})}
}

func (f *fixture) create(obj api.Object) api.Object {
	f.t.Helper()
	out, err := f.store.Create(context.Background(), obj)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// deployment creates a Deployment of replicas and the ReplicaSet it
// controls, and returns the ReplicaSet's controller reference for pods.
func (f *fixture) deployment(name string, replicas int32) metav1.OwnerReference {
	yes := true
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	d := f.create(&api.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Spec: api.DeploymentSpec{Replicas: &replicas, Selector: sel}})
	one := int32(1)
	rs := f.create(&api.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name + "-1", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.GetUID(), Controller: &yes}}}, Spec: api.ReplicaSetSpec{Replicas: &one, Selector: sel}})
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.GetName(), UID: rs.GetUID(), Controller: &yes}
}

func (f *fixture) pod(name string, ref metav1.OwnerReference, ready bool) {
	p := owned(name, "", ready)
	p.Labels = map[string]string{"app": "web"}
	p.OwnerReferences = []metav1.OwnerReference{ref}
	f.create(p)
}

func (f *fixture) budget(spec api.PodDisruptionBudgetSpec) {
	spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	f.create(&api.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: spec})
}

func (f *fixture) sync() (reconcile.Result, *api.PodDisruptionBudget) {
	f.t.Helper()
	res, err := f.r.Reconcile(context.Background(), "shop/web")
	if err != nil {
		f.t.Fatal(err)
	}
	return res, f.get()
}

func (f *fixture) get() *api.PodDisruptionBudget {
	f.t.Helper()
	o, err := f.store.Get(budgetKind, "shop", "web")
	if err != nil {
		f.t.Fatal(err)
	}
	return o.(*api.PodDisruptionBudget)
}

func checkStatus(t *testing.T, b *api.PodDisruptionBudget, allowed, healthy, desired, expected int32, reason string) {
	t.Helper()
	s := b.Status
	if s.DisruptionsAllowed != allowed || s.CurrentHealthy != healthy || s.DesiredHealthy != desired || s.ExpectedPods != expected || s.ObservedGeneration != b.Generation {
		t.Fatalf("status %+v, want allowed %d healthy %d desired %d expected %d at generation %d", s, allowed, healthy, desired, expected, b.Generation)
	}
	c := apimeta.FindStatusCondition(s.Conditions, api.DisruptionAllowedCondition)
	if c == nil || c.Reason != reason || (c.Status == metav1.ConditionTrue) != (allowed > 0) {
		t.Fatalf("condition %+v, want reason %s", c, reason)
	}
}

// A budget by maxUnavailable counts the Deployment's replicas, not the
// pods there are; a pod that becomes ready allows a disruption.
func TestReconcileCountsDeploymentReplicas(t *testing.T) {
	f := newFixture(t)
	ref := f.deployment("web", 3)
	f.pod("web-a", ref, true)
	f.pod("web-b", ref, false)
	f.budget(api.PodDisruptionBudgetSpec{MaxUnavailable: count(intstr.FromInt32(1))})
	_, b := f.sync()
	checkStatus(t, b, 0, 1, 2, 3, api.InsufficientPodsReason)
	f.pod("web-c", ref, true)
	rv := b.ResourceVersion
	_, b = f.sync()
	checkStatus(t, b, 0, 2, 2, 3, api.InsufficientPodsReason)
	if b.ResourceVersion == rv {
		t.Fatal("status not written")
	}
	f.pod("web-d", ref, true)
	_, b = f.sync()
	checkStatus(t, b, 1, 3, 2, 3, api.SufficientPodsReason)
	// Counting again writes nothing.
	rv = b.ResourceVersion
	if _, b = f.sync(); b.ResourceVersion != rv {
		t.Fatalf("an unchanged status was written again: %s, then %s", rv, b.ResourceVersion)
	}
}

// An eviction's entry in disruptedPods keeps its pod out of the healthy
// count until it times out; then the pod counts again, and the controller
// asked to look again just then.
func TestReconcileExpiresDisruptedPods(t *testing.T) {
	f := newFixture(t)
	ref := f.deployment("web", 2)
	f.pod("web-a", ref, true)
	f.pod("web-b", ref, true)
	f.budget(api.PodDisruptionBudgetSpec{MinAvailable: count(intstr.FromInt32(1))})
	_, b := f.sync()
	checkStatus(t, b, 1, 2, 1, 2, api.SufficientPodsReason)
	// What an eviction writes.
	b.Status.DisruptionsAllowed = 0
	b.Status.DisruptedPods = map[string]metav1.Time{"web-a": metav1.NewTime(f.clock.Now())}
	if _, err := f.store.Update(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(30 * time.Second)
	res, b := f.sync()
	checkStatus(t, b, 0, 1, 1, 2, api.InsufficientPodsReason)
	if _, ok := b.Status.DisruptedPods["web-a"]; !ok {
		t.Fatal("the entry went before its time")
	}
	if want := DeletionTimeout - 30*time.Second; res.RequeueAfter < want || res.RequeueAfter > want+time.Millisecond {
		t.Fatalf("requeue after %v, want %v", res.RequeueAfter, want)
	}
	f.clock.Step(res.RequeueAfter)
	res, b = f.sync()
	checkStatus(t, b, 1, 2, 1, 2, api.SufficientPodsReason)
	if len(b.Status.DisruptedPods) != 0 || res.RequeueAfter != 0 {
		t.Fatalf("disrupted %v requeue %v after the timeout", b.Status.DisruptedPods, res.RequeueAfter)
	}
}

// A pod whose controller cannot be found makes a percentage uncountable:
// no disruption is allowed, and the condition says why.
func TestReconcileFailsSafe(t *testing.T) {
	f := newFixture(t)
	ref := f.deployment("web", 2)
	f.pod("web-a", ref, true)
	f.pod("web-b", ref, true)
	f.budget(api.PodDisruptionBudgetSpec{MinAvailable: count(intstr.FromString("50%"))})
	_, b := f.sync()
	checkStatus(t, b, 1, 2, 1, 2, api.SufficientPodsReason)
	lost := ref
	lost.Name, lost.UID = "gone", "gone"
	f.pod("web-c", lost, true)
	_, b = f.sync()
	c := apimeta.FindStatusCondition(b.Status.Conditions, api.DisruptionAllowedCondition)
	if b.Status.DisruptionsAllowed != 0 || c == nil || c.Reason != api.SyncFailedReason || c.Message != `found no controllers for pod "web-c"` {
		t.Fatalf("status %+v", b.Status)
	}
}

// Pods and controllers enqueue the budgets they concern.
func TestWatchKeys(t *testing.T) {
	f := newFixture(t)
	f.budget(api.PodDisruptionBudgetSpec{MinAvailable: count(intstr.FromInt32(1))})
	pod := owned("web-a", "", true)
	other := owned("db-a", "", true)
	other.Labels = map[string]string{"app": "db"}
	if got := f.r.podKeys(store.Event{Type: store.Added, Object: pod}); len(got) != 1 || got[0] != "shop/web" {
		t.Fatalf("pod keys %v", got)
	}
	if got := f.r.podKeys(store.Event{Type: store.Added, Object: other}); len(got) != 0 {
		t.Fatalf("another app's pod: keys %v", got)
	}
	if got := f.r.podKeys(store.Event{Type: store.Modified, Object: other, Old: pod}); len(got) != 1 {
		t.Fatalf("a pod relabelled away: keys %v", got)
	}
	two, three := int32(2), int32(3)
	rs := &api.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "x"}, Spec: api.ReplicaSetSpec{Replicas: &two}}
	scaled := rs.DeepCopy()
	scaled.Spec.Replicas = &three
	if got := f.r.scaleKeys(store.Event{Type: store.Modified, Object: rs, Old: rs}); len(got) != 0 {
		t.Fatalf("unchanged replicas: keys %v", got)
	}
	if got := f.r.scaleKeys(store.Event{Type: store.Modified, Object: scaled, Old: rs}); len(got) != 1 {
		t.Fatalf("scaled: keys %v", got)
	}
}

// The controller of a pod is found as Kubernetes' finders find it, in
// the store: a ReplicationController; a Deployment through the
// ReplicaSet it controls; a ReplicaSet that no Deployment controls. A
// reference whose UID is not the stored object's, or of the wrong group,
// finds nothing, and so does a ReplicaSet whose Deployment is gone.
func TestSnapshotScale(t *testing.T) {
	f := newFixture(t)
	yes := true
	replicas := func(n int32) *int32 { return &n }
	sel := map[string]string{"app": "web"}
	ref := func(apiVersion, kind string, o api.Object) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: o.GetName(), UID: o.GetUID(), Controller: &yes}
	}
	rc := f.create(&api.ReplicationController{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "rc"},
		Spec: api.ReplicationControllerSpec{Replicas: replicas(3), Selector: sel}})
	solo := f.create(&api.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "solo"},
		Spec: api.ReplicaSetSpec{Replicas: replicas(4), Selector: &metav1.LabelSelector{MatchLabels: sel}}})
	fromDeployment := f.deployment("web", 5)
	d, err := f.store.Get(deploymentKind, "shop", "web")
	if err != nil {
		t.Fatal(err)
	}
	foreign := f.create(&api.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "foreign", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "example.com/v1", Kind: "Rollout", Name: "r", UID: "r", Controller: &yes}}},
		Spec: api.ReplicaSetSpec{Replicas: replicas(6), Selector: &metav1.LabelSelector{MatchLabels: sel}}})
	orphaned := f.create(&api.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orphaned", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "gone", UID: "gone", Controller: &yes}}},
		Spec: api.ReplicaSetSpec{Replicas: replicas(7), Selector: &metav1.LabelSelector{MatchLabels: sel}}})
	stale := ref("apps/v1", "ReplicaSet", solo)
	stale.UID = "an-older-solo"

	tests := []struct {
		name     string
		ref      metav1.OwnerReference
		uid      string
		replicas int32
		found    bool
	}{
		{"replication controller", ref("v1", "ReplicationController", rc), string(rc.GetUID()), 3, true},
		{"replica set alone", ref("apps/v1", "ReplicaSet", solo), string(solo.GetUID()), 4, true},
		{"replica set of a deployment", fromDeployment, string(d.GetUID()), 5, true},
		{"replica set of another controller", ref("apps/v1", "ReplicaSet", foreign), string(foreign.GetUID()), 6, true},
		{"replica set of a deleted deployment", ref("apps/v1", "ReplicaSet", orphaned), "", 0, false},
		{"another uid", stale, "", 0, false},
		{"replica set in the core group", ref("v1", "ReplicaSet", solo), "", 0, false},
		{"replication controller in apps", ref("apps/v1", "ReplicationController", rc), "", 0, false},
	}
	scale := snapshotScale(f.store.Snapshot())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			uid, n, ok := scale("shop", &tc.ref)
			if string(uid) != tc.uid || n != tc.replicas || ok != tc.found {
				t.Fatalf("got %q %d %v, want %q %d %v", uid, n, ok, tc.uid, tc.replicas, tc.found)
			}
		})
	}
}

// A budget by percentage over a StatefulSet's pods counts the set's
// replicas, as Kubernetes' finder for StatefulSets does.
func TestReconcileCountsStatefulSetReplicas(t *testing.T) {
	f := newFixture(t)
	yes, replicas := true, int32(4)
	set := f.create(&api.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
		Spec: api.StatefulSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}})
	ref := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: set.GetUID(), Controller: &yes}
	f.pod("db-0", ref, true)
	f.pod("db-1", ref, true)
	f.pod("db-2", ref, true)
	f.budget(api.PodDisruptionBudgetSpec{MinAvailable: count(intstr.FromString("50%"))})
	_, b := f.sync()
	checkStatus(t, b, 1, 3, 2, 4, api.SufficientPodsReason)
}
