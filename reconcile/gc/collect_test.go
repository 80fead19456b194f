package gc

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
	"github.com/berth-dev/berth/testtool"
)

var (
	podKind    = api.MustLookupResource("pods")
	rsKind     = api.MustLookupResource("replicasets")
	cmKind     = api.MustLookupResource("configmaps")
	deployKind = api.MustLookupResource("deployments")
)

func create(t *testing.T, s *store.Store, obj api.Object) api.Object {
	t.Helper()
	api.Default(obj)
	out, err := s.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func owner(name string, finalizers ...string) *api.ReplicaSet {
	return &api.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Finalizers: finalizers},
		Spec: api.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: api.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}},
		},
	}
}

func refTo(o api.Object, controller bool) metav1.OwnerReference {
	ref := *metav1.NewControllerRef(o, api.KindOf(o).GVK)
	if !controller {
		ref.Controller = nil
		ref.BlockOwnerDeletion = nil
	}
	return ref
}

func pod(name, node string, refs ...metav1.OwnerReference) *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, OwnerReferences: refs},
		Spec:       api.PodSpec{NodeName: node, Containers: []api.Container{{Name: "c", Image: "x"}}},
	}
}

func exists(s *store.Store, k *api.Kind, name string) (api.Object, bool) {
	obj, err := s.Get(k, "default", name)
	return obj, err == nil
}

func TestBackgroundDeletesDependentsOfAGoneOwner(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	rs := create(t, s, owner("web"))
	create(t, s, pod("a", "", refTo(rs, true)))
	create(t, s, pod("b", "", refTo(rs, true)))
	c := NewCollector(s)
	deleted, err := s.Delete(ctx, rsKind, "default", "web", store.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keys := c.Keys(store.Event{Type: store.Deleted, Kind: rsKind, Object: deleted})
	want := []string{Key(podKind, "default", "a"), Key(podKind, "default", "b")}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	for _, k := range keys {
		if _, err := c.Reconcile(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"a", "b"} {
		if _, ok := exists(s, podKind, n); ok {
			t.Errorf("pod %s survived its owner", n)
		}
	}
}

func TestOrphanFinalizer(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	rs := create(t, s, owner("web", FinalizerOrphan))
	other := create(t, s, owner("other"))
	create(t, s, pod("a", "", refTo(rs, true)))
	create(t, s, pod("b", "", refTo(rs, true), refTo(other, false)))
	if _, err := s.Delete(ctx, rsKind, "default", "web", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c := NewCollector(s)
	if _, err := c.Reconcile(ctx, Key(rsKind, "default", "web")); err != nil {
		t.Fatal(err)
	}
	if _, ok := exists(s, rsKind, "web"); ok {
		t.Error("owner still stored after its orphan finalizer")
	}
	a, ok := exists(s, podKind, "a")
	if !ok || len(a.GetOwnerReferences()) != 0 {
		t.Errorf("pod a: present %v, refs %v", ok, a)
	}
	b, ok := exists(s, podKind, "b")
	if !ok || len(b.GetOwnerReferences()) != 1 || b.GetOwnerReferences()[0].UID != other.GetUID() {
		t.Errorf("pod b: present %v, %v", ok, b)
	}
}

func TestForegroundWaitsForBlockingDependents(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	rs := create(t, s, owner("web", FinalizerForeground))
	create(t, s, pod("unbound", "", refTo(rs, true)))
	create(t, s, pod("running", "n1", refTo(rs, true))) // a grace period holds it
	if _, err := s.Delete(ctx, rsKind, "default", "web", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c := NewCollector(s)
	key := Key(rsKind, "default", "web")
	if _, err := c.Reconcile(ctx, key); err != nil {
		t.Fatal(err)
	}
	// The dependents are deleted in the foreground too: each holds its
	// finalizer until the collector has looked at its own dependents.
	for _, name := range []string{"unbound", "running"} {
		p, ok := exists(s, podKind, name)
		if !ok || p.GetDeletionTimestamp() == nil || !slices.Contains(p.GetFinalizers(), FinalizerForeground) {
			t.Fatalf("dependent %s not deleted in the foreground: %v", name, p)
		}
		if _, err := c.Reconcile(ctx, Key(podKind, "default", name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := exists(s, podKind, "unbound"); ok {
		t.Error("unbound dependent not deleted")
	}
	running, ok := exists(s, podKind, "running")
	if !ok || running.GetDeletionTimestamp() == nil {
		t.Fatalf("running dependent not marked deleted: %v", running)
	}
	if _, ok := exists(s, rsKind, "web"); !ok {
		t.Fatal("owner gone while a blocking dependent remains")
	}
	// The agent finishes the pod; its deletion brings the owner back.
	gone, err := s.Delete(ctx, podKind, "default", "running", store.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil {
		t.Fatal(err)
	}
	if keys := c.Keys(store.Event{Type: store.Deleted, Kind: podKind, Object: gone}); !slices.Contains(keys, key) {
		t.Fatalf("pod deletion keys %v lack the owner", keys)
	}
	if _, err := c.Reconcile(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, ok := exists(s, rsKind, "web"); ok {
		t.Error("owner still stored after its dependents went")
	}
}

func TestDanglingReferences(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	live := create(t, s, owner("live"))
	stale := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "live", UID: types.UID("old-uid")}
	missing := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "nope", UID: types.UID("x")}
	unknown := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: types.UID("w")}
	tests := []struct {
		name        string
		refs        []metav1.OwnerReference
		wantDeleted bool
		wantRefs    []types.UID
	}{
		{"owner present", []metav1.OwnerReference{refTo(live, true)}, false, []types.UID{live.GetUID()}},
		{"uid mismatch", []metav1.OwnerReference{stale}, true, nil},
		{"owner missing", []metav1.OwnerReference{missing}, true, nil},
		{"one of two gone", []metav1.OwnerReference{missing, refTo(live, false)}, false, []types.UID{live.GetUID()}},
		{"unknown kind left alone", []metav1.OwnerReference{unknown}, false, []types.UID{"w"}},
	}
	c := NewCollector(s)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "cm" + string(rune('a'+i))
			create(t, s, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, OwnerReferences: tt.refs}})
			if _, err := c.Reconcile(ctx, Key(cmKind, "default", name)); err != nil {
				t.Fatal(err)
			}
			obj, ok := exists(s, cmKind, name)
			if ok == tt.wantDeleted {
				t.Fatalf("present %v, want deleted %v", ok, tt.wantDeleted)
			}
			if !ok {
				return
			}
			var uids []types.UID
			for _, r := range obj.GetOwnerReferences() {
				uids = append(uids, r.UID)
			}
			if !slices.Equal(uids, tt.wantRefs) {
				t.Errorf("refs %v, want %v", uids, tt.wantRefs)
			}
		})
	}
}

// runCollector runs the garbage collector over s until the test ends.
func runCollector(t *testing.T, s *store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := NewController(s, Options{}).Run(ctx, 2); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// TestControllerCollects runs the collector: deleting an owner removes its
// dependents, and a chain of them.
func TestControllerCollects(t *testing.T) {
	s := storetest.NewMemory(t)
	runCollector(t, s)
	ctx := context.Background()
	rs := create(t, s, owner("web"))
	p := create(t, s, pod("a", "", refTo(rs, true)))
	create(t, s, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "of-pod", OwnerReferences: []metav1.OwnerReference{refTo(p, false)}}})
	if _, err := s.Delete(ctx, rsKind, "default", "web", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "the dependents to go", func() error {
		_, podLeft := exists(s, podKind, "a")
		_, cmLeft := exists(s, cmKind, "of-pod")
		if podLeft || cmLeft {
			return fmt.Errorf("dependents left: pod %v, configmap %v", podLeft, cmLeft)
		}
		return nil
	})
}

// TestForegroundPropagates runs the collector over a Deployment deleted in
// the foreground, its ReplicaSet and the ReplicaSet's pods, bound to a
// node so that each waits for its agent: the ReplicaSet is deleted in the
// foreground too, and the Deployment stays, marked, until the pods have
// stopped and the ReplicaSet has gone, as kubectl delete
// --cascade=foreground expects.
func TestForegroundPropagates(t *testing.T) {
	s := storetest.NewMemory(t)
	runCollector(t, s)
	ctx := context.Background()
	deploy := create(t, s, &api.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})
	rs := owner("web-1")
	rs.OwnerReferences = []metav1.OwnerReference{refTo(deploy, true)}
	create(t, s, rs)
	rsObj, _ := exists(s, rsKind, "web-1")
	pods := []string{"web-1-a", "web-1-b"}
	for _, name := range pods {
		create(t, s, pod(name, "n1", refTo(rsObj, true)))
	}
	// As the API server records propagationPolicy Foreground.
	marked := deploy.DeepCopyObject().(*api.Deployment)
	marked.Finalizers = []string{FinalizerForeground}
	if _, err := s.Update(ctx, marked); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, deployKind, "default", "web", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// The pods are stopping, with no finalizer of the collector's left:
	// only their agent holds them now.
	testtool.WaitFor(t, 10*time.Second, "the pods to wait only for their agent", func() error {
		for _, name := range pods {
			p, ok := exists(s, podKind, name)
			if !ok || p.GetDeletionTimestamp() == nil || len(p.GetFinalizers()) > 0 {
				return fmt.Errorf("pod %s: %v", name, p)
			}
		}
		if _, ok := exists(s, rsKind, "web-1"); ok {
			return nil
		}
		if _, ok := exists(s, deployKind, "web"); ok {
			return fmt.Errorf("the replicaset went, the deployment not yet")
		}
		return nil
	})
	for _, o := range []struct {
		k    *api.Kind
		name string
	}{{deployKind, "web"}, {rsKind, "web-1"}} {
		obj, ok := exists(s, o.k, o.name)
		if !ok {
			t.Fatalf("%s %s gone while its pods are still stopping", o.k.Resource, o.name)
		}
		if obj.GetDeletionTimestamp() == nil || !slices.Equal(obj.GetFinalizers(), []string{FinalizerForeground}) {
			t.Errorf("%s %s: deletionTimestamp %v, finalizers %v; want it marked, held by %s",
				o.k.Resource, o.name, obj.GetDeletionTimestamp(), obj.GetFinalizers(), FinalizerForeground)
		}
	}

	// The agent is done with the pods: everything goes.
	for _, name := range pods {
		if _, err := s.Delete(ctx, podKind, "default", name, store.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	testtool.WaitFor(t, 10*time.Second, "the deployment and its replicaset to go", func() error {
		_, deployLeft := exists(s, deployKind, "web")
		_, rsLeft := exists(s, rsKind, "web-1")
		if deployLeft || rsLeft {
			return fmt.Errorf("left: deployment %v, replicaset %v", deployLeft, rsLeft)
		}
		return nil
	})
}
