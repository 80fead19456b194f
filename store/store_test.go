package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
)

var (
	podKind, _ = api.LookupResource("pods")
	cmKind, _  = api.LookupResource("configmaps")
)

func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := New(Memory{}, Options{Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func pod(ns, name, node string) *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: api.PodSpec{
			NodeName:   node,
			Containers: []api.Container{{Name: "main", Command: []string{"sleep", "1000"}}},
		},
	}
}

func TestCreateAssignsMetadata(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	obj, err := s.Create(ctx, pod("default", "web", ""))
	if err != nil {
		t.Fatal(err)
	}
	if obj.GetUID() == "" || obj.GetResourceVersion() != "2" || obj.GetGeneration() != 1 {
		t.Fatalf("uid=%q rv=%q generation=%d", obj.GetUID(), obj.GetResourceVersion(), obj.GetGeneration())
	}
	if got := obj.GetCreationTimestamp().Time; !got.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Fatalf("creationTimestamp %v", got)
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "Pod" || gvk.Version != "v1" {
		t.Fatalf("type meta %v", gvk)
	}
	if _, err := s.Create(ctx, pod("default", "web", "")); !IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	cm := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}}
	obj, err = s.Create(ctx, cm)
	if err != nil {
		t.Fatal(err)
	}
	if obj.GetResourceVersion() != "3" || obj.GetGeneration() != 0 {
		t.Fatalf("configmap rv=%s generation=%d", obj.GetResourceVersion(), obj.GetGeneration())
	}
	if s.Revision() != 3 {
		t.Fatalf("revision %d", s.Revision())
	}
}

func TestCreateScopeAndGenerateName(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	p := pod("default", "", "")
	p.GenerateName = "web-"
	obj, err := s.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if n := obj.GetName(); len(n) != len("web-")+5 {
		t.Fatalf("generated name %q", n)
	}
	if _, err := s.Create(ctx, pod("", "x", "")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("pod without namespace: %v", err)
	}
	node := &api.Node{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "n1"}}
	if _, err := s.Create(ctx, node); !errors.Is(err, ErrInvalid) {
		t.Fatalf("node with namespace: %v", err)
	}
}

func TestUpdate(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	created, _ := s.Create(ctx, pod("default", "web", ""))

	// A stale resourceVersion conflicts.
	stale := created.DeepCopyObject().(*api.Pod)
	stale.ResourceVersion = "99"
	_, err := s.Update(ctx, stale)
	if !IsConflict(err) {
		t.Fatalf("stale update: %v", err)
	}
	// It hands back the version it met, for the writer's next attempt.
	if cur := ConflictCurrent(err); cur == nil || cur.GetResourceVersion() != created.GetResourceVersion() {
		t.Fatalf("the conflict's current version: %v", cur)
	}
	if ConflictCurrent(ErrNotFound) != nil {
		t.Fatal("a current version from an error that is no conflict")
	}

	// Changing nothing writes nothing.
	same := created.DeepCopyObject().(*api.Pod)
	out, err := s.Update(ctx, same)
	if err != nil {
		t.Fatal(err)
	}
	if out.GetResourceVersion() != created.GetResourceVersion() || s.Revision() != 2 {
		t.Fatalf("no-op update wrote: rv %s, revision %d", out.GetResourceVersion(), s.Revision())
	}

	// A label change is not a spec change.
	lbl := created.DeepCopyObject().(*api.Pod)
	lbl.Labels["tier"] = "front"
	out, err = s.Update(ctx, lbl)
	if err != nil {
		t.Fatal(err)
	}
	if out.GetResourceVersion() != "3" || out.GetGeneration() != 1 {
		t.Fatalf("label update rv=%s generation=%d", out.GetResourceVersion(), out.GetGeneration())
	}

	// A spec change bumps generation; uid and creation time are kept.
	spec := out.DeepCopyObject().(*api.Pod)
	spec.Spec.Containers[0].Command = []string{"sleep", "1"}
	spec.UID = ""
	spec.CreationTimestamp = metav1.Time{}
	out, err = s.Update(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if out.GetGeneration() != 2 || out.GetUID() != created.GetUID() || out.GetCreationTimestamp() != created.GetCreationTimestamp() {
		t.Fatalf("spec update generation=%d uid=%s", out.GetGeneration(), out.GetUID())
	}

	// An empty resourceVersion updates unconditionally.
	uncond := out.DeepCopyObject().(*api.Pod)
	uncond.ResourceVersion = ""
	uncond.Labels["x"] = "y"
	if _, err := s.Update(ctx, uncond); err != nil {
		t.Fatal(err)
	}

	if _, err := s.Update(ctx, pod("default", "missing", "")); !IsNotFound(err) {
		t.Fatalf("update of missing: %v", err)
	}
}

// TestGenerationCountedForSomeKinds: as in Kubernetes, a Lease (renewed
// every ten seconds), a Node or a Service carries no generation however its
// spec changes, and marking such an object for deletion gives it none,
// while a pod counts both.
func TestGenerationCountedForSomeKinds(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	holder := "n1"
	obj, err := s.Create(ctx, &api.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "n1", Generation: 4, Finalizers: []string{"berth.dev/test"}},
		Spec:       api.LeaseSpec{HolderIdentity: &holder},
	})
	if err != nil {
		t.Fatal(err)
	}
	if obj.GetGeneration() != 0 {
		t.Fatalf("created lease generation %d, want none", obj.GetGeneration())
	}
	l := obj.DeepCopyObject().(*api.Lease)
	now := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC))
	l.Spec.RenewTime = &now
	rv := l.ResourceVersion
	if obj, err = s.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	if obj.GetGeneration() != 0 || obj.GetResourceVersion() == rv {
		t.Fatalf("renewed lease generation %d rv %s, want none and a new rv", obj.GetGeneration(), obj.GetResourceVersion())
	}
	if obj, err = s.Delete(ctx, api.KindOf(l), "default", "n1", DeleteOptions{}); err != nil || obj.GetDeletionTimestamp() == nil {
		t.Fatalf("finalized delete: %v %v", obj, err)
	}
	if obj.GetGeneration() != 0 {
		t.Fatalf("lease marked for deletion has generation %d", obj.GetGeneration())
	}

	p, err := s.Create(ctx, pod("default", "web", "n1"))
	if err != nil {
		t.Fatal(err)
	}
	if p, err = s.Delete(ctx, podKind, "default", "web", DeleteOptions{}); err != nil || p.GetDeletionTimestamp() == nil {
		t.Fatalf("graceful delete: %v %v", p, err)
	}
	if p.GetGeneration() != 2 {
		t.Fatalf("pod marked for deletion has generation %d, want 2", p.GetGeneration())
	}
}

// TestUpdateComparesSemantically: an update whose spec and status differ
// only in the spelling of a quantity or the zone of a time writes nothing;
// a status change writes without a new generation, a spec change with one.
func TestUpdateComparesSemantically(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	p := pod("default", "web", "")
	p.Spec.Containers[0].Resources.Requests = api.ResourceList{api.ResourceCPU: resource.MustParse("1")}
	started := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	p.Status.StartTime = &started
	obj, err := s.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	same := obj.DeepCopyObject().(*api.Pod)
	same.Spec.Containers[0].Resources.Requests[api.ResourceCPU] = resource.MustParse("1000m")
	elsewhere := metav1.NewTime(started.In(time.FixedZone("east", 3600)))
	same.Status.StartTime = &elsewhere
	got, err := s.Update(ctx, same)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetResourceVersion() != obj.GetResourceVersion() {
		t.Fatalf("an update equal but for spelling wrote resourceVersion %s over %s", got.GetResourceVersion(), obj.GetResourceVersion())
	}
	status := obj.DeepCopyObject().(*api.Pod)
	status.Status.Phase = api.PodRunning
	if got, err = s.Update(ctx, status); err != nil {
		t.Fatal(err)
	}
	if got.GetResourceVersion() == obj.GetResourceVersion() || got.GetGeneration() != obj.GetGeneration() {
		t.Fatalf("status update: resourceVersion %s (was %s), generation %d (was %d)",
			got.GetResourceVersion(), obj.GetResourceVersion(), got.GetGeneration(), obj.GetGeneration())
	}
	spec := got.DeepCopyObject().(*api.Pod)
	spec.Spec.Containers[0].Resources.Requests[api.ResourceCPU] = resource.MustParse("2")
	if got, err = s.Update(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if got.GetGeneration() != obj.GetGeneration()+1 {
		t.Fatalf("spec update: generation %d, want %d", got.GetGeneration(), obj.GetGeneration()+1)
	}
}

// TestFinalizersOfAPodInItsGracePeriod: a pod being deleted on its node
// waits for both its finalizers and its agent, in either order, as in
// Kubernetes, where removing the last finalizer deletes only an object
// with no grace period left.
func TestFinalizersOfAPodInItsGracePeriod(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := New(Memory{}, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	zero := int64(0)
	held := func(name string) {
		t.Helper()
		p := pod("default", name, "n1")
		p.Finalizers = []string{"berth.dev/test"}
		if _, err := s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if obj, err := s.Delete(ctx, podKind, "default", name, DeleteOptions{}); err != nil || obj.GetDeletionTimestamp() == nil {
			t.Fatalf("graceful delete of %s: %v %v", name, obj, err)
		}
	}
	release := func(name string) {
		t.Helper()
		obj, err := s.Get(podKind, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		p := obj.DeepCopyObject().(*api.Pod)
		p.Finalizers = nil
		if _, err := s.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	present := func(name string) bool {
		_, err := s.Get(podKind, "default", name)
		return err == nil
	}

	// The finalizer goes first: the pod stays until its agent is done.
	held("first")
	release("first")
	if !present("first") {
		t.Fatal("a pod in its grace period went with its finalizer")
	}
	if _, err := s.Delete(ctx, podKind, "default", "first", DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if present("first") {
		t.Fatal("pod still there after grace 0")
	}

	// The agent is done first, past the deadline: the finalizer's
	// removal lets the pod go.
	held("second")
	clk.SetTime(clk.Now().Add(time.Minute))
	if _, err := s.Delete(ctx, podKind, "default", "second", DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if !present("second") {
		t.Fatal("a pod went while its finalizer held it")
	}
	release("second")
	if present("second") {
		t.Fatal("pod still there after its agent and its finalizer were done")
	}
}

func TestDeleteGraceful(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()

	// An unbound pod goes at once.
	s.Create(ctx, pod("default", "pending", ""))
	if _, err := s.Delete(ctx, podKind, "default", "pending", DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(podKind, "default", "pending"); !IsNotFound(err) {
		t.Fatalf("unbound pod still there: %v", err)
	}

	// A bound pod is marked with its grace period, then removed with 0.
	s.Create(ctx, pod("default", "running", "n1"))
	obj, err := s.Delete(ctx, podKind, "default", "running", DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if obj.GetDeletionTimestamp() == nil || *obj.GetDeletionGracePeriodSeconds() != 30 {
		t.Fatalf("bound pod not marked: %v", obj.GetDeletionTimestamp())
	}
	if _, err := s.Get(podKind, "default", "running"); err != nil {
		t.Fatalf("marked pod gone early: %v", err)
	}
	zero := int64(0)
	if _, err := s.Delete(ctx, podKind, "default", "running", DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(podKind, "default", "running"); !IsNotFound(err) {
		t.Fatalf("pod still there after grace 0: %v", err)
	}

	// Finalizers hold an object until an update removes the last one.
	cm := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c", Finalizers: []string{"berth.dev/test"}}}
	s.Create(ctx, cm)
	obj, err = s.Delete(ctx, cmKind, "default", "c", DeleteOptions{})
	if err != nil || obj.GetDeletionTimestamp() == nil {
		t.Fatalf("finalized delete: %v %v", obj, err)
	}
	held := obj.DeepCopyObject().(*api.ConfigMap)
	held.Finalizers = nil
	if _, err := s.Update(ctx, held); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(cmKind, "default", "c"); !IsNotFound(err) {
		t.Fatalf("configmap still there after its finalizer went: %v", err)
	}

	// Preconditions.
	s.Create(ctx, pod("default", "p", ""))
	if _, err := s.Delete(ctx, podKind, "default", "p", DeleteOptions{Preconditions: &Preconditions{UID: "nope"}}); !IsConflict(err) {
		t.Fatalf("uid precondition: %v", err)
	}
}

// TestDryRunKeepsNothing: a dry run computes the write, conflicts and
// all, and the store is as it was.
func TestDryRunKeepsNothing(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, pod("default", "web", "")); err != nil {
		t.Fatal(err)
	}
	before := s.Revision()
	rev, err := s.DryRun(context.Background(), func(tx *Txn) error {
		p, err := tx.Create(pod("default", "new", ""))
		if err != nil {
			return err
		}
		if p.GetUID() == "" || p.GetResourceVersion() != fmt.Sprint(before+1) {
			t.Errorf("dry-run create uid %q rv %s", p.GetUID(), p.GetResourceVersion())
		}
		_, err = tx.Delete(podKind, "default", "web", DeleteOptions{})
		return err
	})
	if err != nil || rev != before+1 {
		t.Fatalf("dry run: rev %d, %v", rev, err)
	}
	if s.Revision() != before {
		t.Errorf("revision %d after a dry run, was %d", s.Revision(), before)
	}
	if _, err := s.Get(podKind, "default", "new"); !IsNotFound(err) {
		t.Errorf("dry-run create was kept: %v", err)
	}
	if _, err := s.Get(podKind, "default", "web"); err != nil {
		t.Errorf("dry-run delete was kept: %v", err)
	}
	if _, err := s.DryRun(context.Background(), func(tx *Txn) error {
		_, err := tx.Create(pod("default", "web", ""))
		return err
	}); !IsAlreadyExists(err) {
		t.Errorf("dry-run create of an existing name: %v", err)
	}
	// The revision a dry run showed goes to the next real write.
	if _, err := s.Create(ctx, pod("default", "next", "")); err != nil || s.Revision() != before+1 {
		t.Fatalf("next write: revision %d, %v", s.Revision(), err)
	}
}

func TestTxnIsAtomic(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	s.Create(ctx, pod("default", "b", ""))
	boom := errors.New("boom")
	_, err := s.Txn(ctx, func(tx *Txn) error {
		if _, err := tx.Create(pod("default", "a", "")); err != nil {
			return err
		}
		// The transaction sees its own write.
		if _, err := tx.Get(podKind, "default", "a"); err != nil {
			return err
		}
		if _, err := tx.Create(pod("default", "b", "")); err != nil {
			return fmt.Errorf("%w: %v", boom, err)
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("txn error %v", err)
	}
	if _, err := s.Get(podKind, "default", "a"); !IsNotFound(err) {
		t.Fatalf("aborted create is visible: %v", err)
	}
	rev, err := s.Txn(ctx, func(tx *Txn) error {
		for i := range 3 {
			if _, err := tx.Create(pod("default", fmt.Sprintf("t%d", i), "")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || rev != 3 {
		t.Fatalf("rev %d err %v", rev, err)
	}
	for i := range 3 {
		obj, _ := s.Get(podKind, "default", fmt.Sprintf("t%d", i))
		if obj.GetResourceVersion() != "3" {
			t.Fatalf("object of one transaction has rv %s", obj.GetResourceVersion())
		}
	}
}

func TestListByIndex(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	owner := "11111111-2222-3333-4444-555555555555"
	for i := range 10 {
		p := pod("default", fmt.Sprintf("p%d", i), fmt.Sprintf("n%d", i%3))
		if i%2 == 0 {
			p.OwnerReferences = []metav1.OwnerReference{{UID: "11111111-2222-3333-4444-555555555555", Name: "rs", Kind: "ReplicaSet", APIVersion: "apps/v1"}}
		}
		p.Annotations = map[string]string{api.AnnotationSource: "fleet"}
		s.Create(ctx, p)
	}
	s.Create(ctx, pod("other", "p0", ""))
	s.Create(ctx, pod("default", "n1x", "n10"))

	cases := []struct {
		name string
		f    Filter
		want int
	}{
		{"all", Filter{}, 12},
		{"namespace", Filter{Namespace: "default"}, 11},
		{"node n1", Filter{Index: IndexNode, Value: "n1"}, 3},
		{"node n10 is not n1", Filter{Index: IndexNode, Value: "n10"}, 1},
		{"unbound", Filter{Index: IndexNode, Value: ""}, 1},
		{"owner", Filter{Index: IndexOwner, Value: owner}, 5},
		{"source", Filter{Index: IndexSource, Value: "fleet"}, 10},
		{"labels", Filter{Labels: labels.SelectorFromSet(labels.Set{"app": "p0"})}, 2},
		{"namespace and labels", Filter{Namespace: "other", Labels: labels.SelectorFromSet(labels.Set{"app": "p0"})}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, _, err := s.List(podKind, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != tc.want {
				t.Fatalf("got %d objects, want %d", len(objs), tc.want)
			}
		})
	}
	if _, _, err := s.List(podKind, Filter{Index: "nope", Value: "x"}); err == nil {
		t.Fatal("unknown index: no error")
	}
}

func TestSnapshotIsConsistent(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	s.Create(ctx, pod("default", "a", ""))
	snap := s.Snapshot()
	s.Create(ctx, pod("default", "b", ""))
	objs, _ := snap.List(podKind, Filter{})
	if len(objs) != 1 || snap.Revision() != 2 {
		t.Fatalf("snapshot sees %d objects at revision %d", len(objs), snap.Revision())
	}
	if objs, _, _ := s.List(podKind, Filter{}); len(objs) != 2 {
		t.Fatalf("store sees %d objects", len(objs))
	}
}

func TestClosedStoreRefusesWrites(t *testing.T) {
	s, err := New(Memory{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Create(context.Background(), pod("default", "a", "")); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

type failingBackend struct{ Memory }

func (failingBackend) Commit(uint64, []Op) error { return errors.New("disk on fire") }

func TestBackendFailureStopsWrites(t *testing.T) {
	s, err := New(failingBackend{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Err(); err != nil {
		t.Fatalf("a new store reports %v", err)
	}
	if _, err := s.Create(ctx, pod("default", "a", "")); err == nil {
		t.Fatal("write acknowledged though the backend failed")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Err after the backend failed: %v", err)
	}
	if _, err := s.Get(podKind, "default", "a"); !IsNotFound(err) {
		t.Fatalf("a write that never became durable is visible: %v", err)
	}
	if _, err := s.Create(ctx, pod("default", "b", "")); err == nil {
		t.Fatal("store accepted a write after a backend failure")
	}
}
