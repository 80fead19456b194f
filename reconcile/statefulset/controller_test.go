package statefulset

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/history"
	"github.com/berth-dev/berth/store"
)

var t0 = time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)

type env struct {
	t     *testing.T
	s     *store.Store
	clock *testclock.FakeClock
	r     *Reconciler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := testclock.NewFakeClock(t0)
	return &env{t: t, s: s, clock: c, r: NewReconciler(s, c, nil)}
}

func webSet(replicas int32, opts ...func(*api.StatefulSet)) *api.StatefulSet {
	set := &api.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: api.StatefulSetSpec{
			Replicas:    &replicas,
			ServiceName: "web",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: api.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: api.PodSpec{Containers: []api.Container{{Name: "web", Image: "v1",
					VolumeMounts: []api.VolumeMount{{Name: "data", MountPath: "/data"}}}}},
			},
			VolumeClaimTemplates: []api.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: api.PersistentVolumeClaimSpec{
				AccessModes: []api.PersistentVolumeAccessMode{api.ReadWriteOnce},
				Resources:   api.VolumeResourceRequirements{Requests: api.ResourceList{api.ResourceStorage: resource.MustParse("1Gi")}},
			}}},
		},
	}
	for _, o := range opts {
		o(set)
	}
	return set
}

func (e *env) create(obj api.Object) {
	e.t.Helper()
	api.Default(obj)
	if errs := api.Validate(obj); len(errs) > 0 {
		e.t.Fatal(errs)
	}
	if _, err := e.s.Create(context.Background(), obj); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) sync() {
	e.t.Helper()
	if _, err := e.r.Reconcile(context.Background(), "default/web"); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) set() *api.StatefulSet {
	e.t.Helper()
	obj, err := e.s.Get(setKind, "default", "web")
	if err != nil {
		e.t.Fatal(err)
	}
	return obj.(*api.StatefulSet)
}

// update changes the set as a user would: the spec, a new generation.
func (e *env) update(change func(*api.StatefulSet)) {
	e.t.Helper()
	set := e.set().DeepCopy()
	change(set)
	api.Default(set)
	if _, err := e.s.Update(context.Background(), set); err != nil {
		e.t.Fatal(err)
	}
}

// pods returns the names of the pods, sorted, with their revision.
func (e *env) pods() map[string]*api.Pod {
	e.t.Helper()
	objs, _, err := e.s.List(podKind, store.Filter{Namespace: "default"})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]*api.Pod{}
	for _, o := range objs {
		out[o.GetName()] = o.(*api.Pod)
	}
	return out
}

func (e *env) podNames() []string {
	var names []string
	for n := range e.pods() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (e *env) claims() []string {
	e.t.Helper()
	objs, _, err := e.s.List(claimKind, store.Filter{Namespace: "default"})
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	slices.Sort(names)
	return names
}

// ready marks a pod running and ready now, as its agent would.
func (e *env) ready(name string) {
	e.t.Helper()
	p := e.pods()[name].DeepCopy()
	p.Status.Phase = api.PodRunning
	p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue, LastTransitionTime: metav1.NewTime(e.clock.Now())}}
	if _, err := e.s.Update(context.Background(), p); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) deletePod(name string) {
	e.t.Helper()
	if _, err := e.s.Delete(context.Background(), podKind, "default", name, store.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func wantNames(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

// TestOrderedStart: under OrderedReady each ordinal waits for the one
// before to be running and ready; every pod has its identity and its
// claim.
func TestOrderedStart(t *testing.T) {
	e := newEnv(t)
	e.create(webSet(3))
	e.sync()
	wantNames(t, "after the first sync", e.podNames(), "web-0")
	wantNames(t, "claims", e.claims(), "data-web-0")
	e.sync()
	wantNames(t, "web-0 not ready", e.podNames(), "web-0")
	e.ready("web-0")
	e.sync()
	wantNames(t, "web-0 ready", e.podNames(), "web-0", "web-1")
	e.ready("web-1")
	e.sync()
	e.ready("web-2")
	e.sync()
	wantNames(t, "all", e.podNames(), "web-0", "web-1", "web-2")
	wantNames(t, "claims", e.claims(), "data-web-0", "data-web-1", "data-web-2")

	p := e.pods()["web-1"]
	set := e.set()
	if p.Spec.Hostname != "web-1" || p.Spec.Subdomain != "web" {
		t.Errorf("hostname %q subdomain %q", p.Spec.Hostname, p.Spec.Subdomain)
	}
	if p.Labels[api.LabelStatefulSetPodName] != "web-1" || p.Labels[api.LabelPodIndex] != "1" || p.Labels[api.LabelControllerRevisionHash] != set.Status.UpdateRevision {
		t.Errorf("labels %v, update revision %s", p.Labels, set.Status.UpdateRevision)
	}
	if v := p.Spec.Volumes; len(v) != 1 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != "data-web-1" {
		t.Errorf("volumes %+v", v)
	}
	if ref := api.ControllerOf(p); ref == nil || ref.UID != set.UID || ref.Kind != "StatefulSet" {
		t.Errorf("owner %+v", ref)
	}
	st := set.Status
	if st.Replicas != 3 || st.ReadyReplicas != 3 || st.AvailableReplicas != 3 || st.CurrentReplicas != 3 || st.UpdatedReplicas != 3 ||
		st.CurrentRevision != st.UpdateRevision || st.ObservedGeneration != set.Generation {
		t.Errorf("status %+v", st)
	}
	revs, _ := history.Owned(e.s, set)
	if len(revs) != 1 || revs[0].Name != st.UpdateRevision || revs[0].Revision != 1 {
		t.Errorf("revisions %v", revs)
	}

	// A pod deleted comes back under its name, with its claim.
	e.deletePod("web-1")
	e.sync()
	wantNames(t, "web-1 again", e.podNames(), "web-0", "web-1", "web-2")
	wantNames(t, "claims kept", e.claims(), "data-web-0", "data-web-1", "data-web-2")

	// Scale down: the highest ordinal first, one at a time.
	e.update(func(s *api.StatefulSet) { s.Spec.Replicas = ptr(int32(1)) })
	e.ready("web-1")
	e.sync()
	wantNames(t, "scaled to 1, first step", e.podNames(), "web-0", "web-1")
	e.sync()
	wantNames(t, "scaled to 1", e.podNames(), "web-0")
	wantNames(t, "claims retained", e.claims(), "data-web-0", "data-web-1", "data-web-2")
}

func TestParallelAndOrdinals(t *testing.T) {
	e := newEnv(t)
	e.create(webSet(3, func(s *api.StatefulSet) {
		s.Spec.PodManagementPolicy = api.ParallelPodManagement
		s.Spec.Ordinals = &api.StatefulSetOrdinals{Start: 5}
	}))
	e.sync()
	wantNames(t, "parallel", e.podNames(), "web-5", "web-6", "web-7")
	if idx := e.pods()["web-6"].Labels[api.LabelPodIndex]; idx != "6" {
		t.Errorf("pod-index %q", idx)
	}
	e.update(func(s *api.StatefulSet) { s.Spec.Replicas = ptr(int32(1)) })
	e.sync()
	wantNames(t, "parallel scale down", e.podNames(), "web-5")
}

// TestClaimRetention: whenScaled Delete deletes the claims of the
// ordinals a scale down removed, once their pods are gone; whenDeleted
// Delete makes the set own its claims, for the garbage collector.
func TestClaimRetention(t *testing.T) {
	e := newEnv(t)
	e.create(webSet(2, func(s *api.StatefulSet) {
		s.Spec.PodManagementPolicy = api.ParallelPodManagement
		s.Spec.PersistentVolumeClaimRetentionPolicy = &api.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: api.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: api.DeletePersistentVolumeClaimRetentionPolicyType}
	}))
	e.sync()
	wantNames(t, "claims", e.claims(), "data-web-0", "data-web-1")
	obj, _ := e.s.Get(claimKind, "default", "data-web-0")
	if ref := api.ControllerOf(obj); ref == nil || ref.UID != e.set().UID {
		t.Errorf("claim owner %+v", ref)
	}
	e.update(func(s *api.StatefulSet) { s.Spec.Replicas = ptr(int32(1)) })
	e.sync()
	e.sync()
	wantNames(t, "pods", e.podNames(), "web-0")
	wantNames(t, "claims", e.claims(), "data-web-0")
}

// TestPartitionRollout: a new template replaces pods from the highest
// ordinal down to the partition, one at a time, each when the one above
// it is ready again; lowering the partition finishes the rollout and the
// update revision becomes the current one.
func TestPartitionRollout(t *testing.T) {
	e := newEnv(t)
	e.create(webSet(3))
	for _, n := range []string{"web-0", "web-1", "web-2"} {
		e.sync()
		e.ready(n)
	}
	e.sync()
	oldRev := e.set().Status.CurrentRevision
	e.update(func(s *api.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = "v2"
		s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr(int32(1))
	})
	e.sync()
	wantNames(t, "web-2 replaced first", e.podNames(), "web-0", "web-1")
	e.sync()
	if img := e.pods()["web-2"].Spec.Containers[0].Image; img != "v2" {
		t.Fatalf("web-2 runs %s", img)
	}
	e.sync()
	wantNames(t, "web-1 waits for web-2", e.podNames(), "web-0", "web-1", "web-2")
	e.ready("web-2")
	e.sync()
	e.sync()
	e.ready("web-1")
	e.sync()
	e.sync()
	pods := e.pods()
	if pods["web-0"].Spec.Containers[0].Image != "v1" || pods["web-1"].Spec.Containers[0].Image != "v2" {
		t.Fatalf("images %s %s", pods["web-0"].Spec.Containers[0].Image, pods["web-1"].Spec.Containers[0].Image)
	}
	st := e.set().Status
	if st.UpdatedReplicas != 2 || st.CurrentReplicas != 1 || st.CurrentRevision != oldRev || st.UpdateRevision == oldRev {
		t.Fatalf("status under the partition %+v", st)
	}
	// web-0 deleted below the partition comes back at the current revision.
	e.deletePod("web-0")
	e.sync()
	if img := e.pods()["web-0"].Spec.Containers[0].Image; img != "v1" {
		t.Fatalf("web-0 below the partition made from %s", img)
	}
	e.ready("web-0")
	e.update(func(s *api.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr(int32(0)) })
	e.sync()
	e.sync()
	e.ready("web-0")
	e.sync()
	st = e.set().Status
	if e.pods()["web-0"].Spec.Containers[0].Image != "v2" || st.CurrentRevision != st.UpdateRevision || st.UpdatedReplicas != 3 || st.CurrentReplicas != 3 {
		t.Fatalf("rollout done: %+v", st)
	}
	revs, _ := history.Owned(e.s, e.set())
	if len(revs) != 2 || revs[1].Revision != 2 {
		t.Fatalf("revisions %d", len(revs))
	}

	// A rollback to v1 renumbers the first revision rather than making a
	// new one.
	e.update(func(s *api.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "v1" })
	e.sync()
	revs, _ = history.Owned(e.s, e.set())
	if len(revs) != 2 || revs[1].Name != oldRev || revs[1].Revision != 3 {
		t.Fatalf("after the rollback: %s r%d, %s r%d", revs[0].Name, revs[0].Revision, revs[1].Name, revs[1].Revision)
	}
}

// TestOnDelete: a new template replaces no pod until it is deleted.
func TestOnDelete(t *testing.T) {
	e := newEnv(t)
	e.create(webSet(2, func(s *api.StatefulSet) {
		s.Spec.UpdateStrategy = api.StatefulSetUpdateStrategy{Type: api.OnDeleteStatefulSetStrategyType}
	}))
	e.sync()
	e.ready("web-0")
	e.sync()
	e.ready("web-1")
	e.update(func(s *api.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "v2" })
	e.sync()
	e.sync()
	for n, p := range e.pods() {
		if p.Spec.Containers[0].Image != "v1" {
			t.Fatalf("%s replaced under OnDelete", n)
		}
	}
	e.deletePod("web-1")
	e.sync()
	if img := e.pods()["web-1"].Spec.Containers[0].Image; img != "v2" {
		t.Fatalf("web-1 made again from %s", img)
	}
	if st := e.set().Status; st.UpdatedReplicas != 1 || st.CurrentReplicas != 1 {
		t.Fatalf("status %+v", st)
	}
}

// TestMinReadySeconds: a ready pod is available after minReadySeconds on
// the injected clock, and the sync asks to be run again then.
func TestMinReadySeconds(t *testing.T) {
	e := newEnv(t)
	e.create(webSet(1, func(s *api.StatefulSet) { s.Spec.MinReadySeconds = 10 }))
	e.sync()
	e.ready("web-0")
	res, err := e.r.Reconcile(context.Background(), "default/web")
	if err != nil {
		t.Fatal(err)
	}
	if st := e.set().Status; st.ReadyReplicas != 1 || st.AvailableReplicas != 0 || res.RequeueAfter != 10*time.Second {
		t.Fatalf("status %+v, requeue %v", st, res.RequeueAfter)
	}
	e.clock.Step(10 * time.Second)
	e.sync()
	if st := e.set().Status; st.AvailableReplicas != 1 {
		t.Fatalf("status %+v", st)
	}
}

// TestParallelMaxUnavailable: a Parallel set with maxUnavailable 2 takes
// two pods down at once.
func TestParallelMaxUnavailable(t *testing.T) {
	e := newEnv(t)
	e.create(webSet(4, func(s *api.StatefulSet) { s.Spec.PodManagementPolicy = api.ParallelPodManagement }))
	e.sync()
	for _, n := range e.podNames() {
		e.ready(n)
	}
	e.update(func(s *api.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = "v2"
		s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr(intOrStr(2))
	})
	e.sync()
	wantNames(t, "two down", e.podNames(), "web-0", "web-1")
}

func ptr[T any](v T) *T { return &v }

func TestOrdinalOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		ord  int
		ok   bool
	}{{"web-0", 0, true}, {"web-12", 12, true}, {"web-012", 0, false}, {"web-", 0, false}, {"web-x", 0, false}, {"webb-1", 0, false}, {"web-a-1", 0, false}} {
		ord, ok := ordinalOf("web", tc.name)
		if ord != tc.ord || ok != tc.ok {
			t.Errorf("%s: %d %v", tc.name, ord, ok)
		}
	}
	_ = fmt.Sprint()
}

func intOrStr(n int32) intstr.IntOrString { return intstr.FromInt32(n) }
