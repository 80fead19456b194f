package namespace

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

var (
	podKind = api.MustLookupResource("pods")
	cmKind  = api.MustLookupResource("configmaps")
)

func newStore(t *testing.T, admit ...store.AdmitFunc) *store.Store {
	t.Helper()
	s, err := store.New(store.Memory{}, store.Options{Admit: admit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func create(t *testing.T, s *store.Store, obj api.Object) {
	t.Helper()
	api.Default(obj)
	if _, err := s.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func getNamespace(s *store.Store, name string) *api.Namespace {
	obj, err := s.Get(namespaceKind, "", name)
	if err != nil {
		return nil
	}
	return obj.(*api.Namespace)
}

func TestDefaultIsRecreated(t *testing.T) {
	s := newStore(t)
	r := NewReconciler(s)
	if _, err := r.Reconcile(context.Background(), api.NamespaceDefault); err != nil {
		t.Fatal(err)
	}
	ns := getNamespace(s, api.NamespaceDefault)
	if ns == nil || ns.Status.Phase != api.NamespaceActive || len(ns.Spec.Finalizers) != 1 {
		t.Fatalf("default namespace %+v", ns)
	}
	// Another namespace that is gone stays gone.
	if _, err := r.Reconcile(context.Background(), "team"); err != nil {
		t.Fatal(err)
	}
	if getNamespace(s, "team") != nil {
		t.Error("a deleted namespace other than default was recreated")
	}
}

func TestTerminatingNamespaceIsEmptiedThenGoes(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	create(t, s, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	create(t, s, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cfg"}})
	create(t, s, &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "unbound"},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "x"}}}})
	create(t, s, &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "running"},
		Spec: api.PodSpec{NodeName: "n1", Containers: []api.Container{{Name: "c", Image: "x"}}}})
	create(t, s, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "cfg"}})

	r := NewReconciler(s)
	// Not being deleted: nothing happens.
	if _, err := r.Reconcile(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(cmKind, "team", "cfg"); err != nil {
		t.Fatal("an active namespace lost its contents")
	}

	if _, err := s.Delete(ctx, namespaceKind, "", "team", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if ns := getNamespace(s, "team"); ns == nil || ns.Status.Phase != api.NamespaceTerminating {
		t.Fatalf("deleted namespace %+v, want Terminating", ns)
	}
	res, err := r.Reconcile(ctx, "team")
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != RecheckAfter {
		t.Errorf("requeue after %v with a pod still terminating", res.RequeueAfter)
	}
	for _, n := range []string{"cfg", "unbound"} {
		k := cmKind
		if n == "unbound" {
			k = podKind
		}
		if _, err := s.Get(k, "team", n); !store.IsNotFound(err) {
			t.Errorf("%s %s still there: %v", k.Resource, n, err)
		}
	}
	running, err := s.Get(podKind, "team", "running")
	if err != nil || running.GetDeletionTimestamp() == nil {
		t.Fatalf("running pod not marked: %v %v", running, err)
	}
	if getNamespace(s, "team") == nil {
		t.Fatal("namespace went before its pod")
	}
	// The agent finishes the pod.
	if _, err := s.Delete(ctx, podKind, "team", "running", store.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if ns := getNamespace(s, "team"); ns != nil {
		t.Errorf("empty namespace still stored: %+v", ns)
	}
	if _, err := s.Get(cmKind, "other", "cfg"); err != nil {
		t.Error("another namespace's object was deleted")
	}
}

// TestControllerKeepsDefault runs the controller: default is created at
// start, and again after it is deleted.
func TestControllerKeepsDefault(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	c := NewController(s, Options{})
	wg.Go(func() {
		if err := c.Run(ctx, 1); err != nil {
			t.Error(err)
		}
	})
	waitFor(t, "default created", func() bool { return getNamespace(s, api.NamespaceDefault) != nil })
	first := getNamespace(s, api.NamespaceDefault).UID
	create(t, s, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"}})
	if _, err := s.Delete(ctx, namespaceKind, "", api.NamespaceDefault, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "default emptied and recreated", func() bool {
		ns := getNamespace(s, api.NamespaceDefault)
		_, err := s.Get(cmKind, "default", "cfg")
		return ns != nil && ns.UID != first && ns.DeletionTimestamp == nil && store.IsNotFound(err)
	})
}

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, 10*time.Second, what, func() error {
		if !cond() {
			return errors.New("condition not met")
		}
		return nil
	})
}
