package serviceaccount

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
	"github.com/berth-dev/berth/testtool"
)

func createNamespace(t *testing.T, s *store.Store, name string) {
	t.Helper()
	ns := &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	api.Default(ns)
	if _, err := s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
}

func hasDefault(s *store.Store, ns string) error {
	if _, err := s.Get(accountKind, ns, api.DefaultServiceAccountName); err != nil {
		return fmt.Errorf("serviceaccount %s/default: %w", ns, err)
	}
	return nil
}

func TestReconcile(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	r := NewReconciler(s)
	createNamespace(t, s, "team")
	for i := 0; i < 2; i++ { // a second pass changes nothing
		if _, err := r.Reconcile(ctx, "team"); err != nil {
			t.Fatal(err)
		}
	}
	if err := hasDefault(s, "team"); err != nil {
		t.Fatal(err)
	}
	rev := s.Revision()
	if _, err := r.Reconcile(ctx, "team"); err != nil || s.Revision() != rev {
		t.Errorf("a converged namespace was written: %v, revision %d → %d", err, rev, s.Revision())
	}
	// A namespace that is gone, or going, gets none.
	if _, err := r.Reconcile(ctx, "nope"); err != nil || hasDefault(s, "nope") == nil {
		t.Errorf("missing namespace: %v", err)
	}
	createNamespace(t, s, "going")
	if _, err := s.Delete(ctx, namespaceKind, "", "going", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if obj, err := s.Get(namespaceKind, "", "going"); err != nil || obj.GetDeletionTimestamp() == nil {
		t.Fatalf("namespace going should be terminating: %v", err)
	}
	if _, err := r.Reconcile(ctx, "going"); err != nil || hasDefault(s, "going") == nil {
		t.Errorf("terminating namespace got a service account: %v", err)
	}
}

func TestControllerRecreatesDefault(t *testing.T) {
	s := storetest.NewMemory(t)
	createNamespace(t, s, api.NamespaceDefault)
	ctx, cancel := context.WithCancel(context.Background())
	c := NewController(s, Options{})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	t.Cleanup(func() { cancel(); <-done })

	testtool.WaitFor(t, 10*time.Second, "default/default", func() error { return hasDefault(s, api.NamespaceDefault) })
	createNamespace(t, s, "team")
	testtool.WaitFor(t, 10*time.Second, "team/default", func() error { return hasDefault(s, "team") })
	if _, err := s.Delete(context.Background(), accountKind, "team", api.DefaultServiceAccountName, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "team/default recreated", func() error { return hasDefault(s, "team") })
}
