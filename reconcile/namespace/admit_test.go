package namespace

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Once a namespace is being deleted the store refuses new objects in it,
// from any writer, and still takes updates and deletions there and
// creations elsewhere.
func TestAdmitRefusesCreationInATerminatingNamespace(t *testing.T) {
	s := newStore(t, Admit)
	ctx := context.Background()
	for _, name := range []string{"team", "other"} {
		create(t, s, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	cm := func(ns, name string) *api.ConfigMap {
		return &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": "v"}}
	}
	create(t, s, cm("team", "before"))

	if _, err := s.Delete(ctx, namespaceKind, "", "team", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if ns := getNamespace(s, "team"); ns == nil || !ns.Terminating() {
		t.Fatalf("namespace %+v, want it terminating", ns)
	}
	_, err := s.Create(ctx, cm("team", "after"))
	if !store.IsForbidden(err) || !strings.Contains(err.Error(), "namespace team because it is being terminated") {
		t.Fatalf("create in a terminating namespace: %v", err)
	}
	// In a transaction with other writes, the refused one alone fails.
	_, err = s.Txn(ctx, func(tx *store.Txn) error {
		if _, err := tx.Create(cm("team", "in-txn")); !store.IsForbidden(err) {
			t.Errorf("create in a transaction: %v", err)
		}
		_, err := tx.Create(cm("other", "in-txn"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(cmKind, "other", "in-txn"); err != nil {
		t.Errorf("the other namespace's object: %v", err)
	}
	before, err := s.Get(cmKind, "team", "before")
	if err != nil {
		t.Fatal(err)
	}
	changed := before.(*api.ConfigMap).DeepCopy()
	changed.Data["k"] = "w"
	if _, err := s.Update(ctx, changed); err != nil {
		t.Errorf("update in a terminating namespace: %v", err)
	}
	if _, err := s.Delete(ctx, cmKind, "team", "before", store.DeleteOptions{}); err != nil {
		t.Errorf("delete in a terminating namespace: %v", err)
	}
	// A namespace that does not exist is the API's to refuse.
	if _, err := s.Create(ctx, cm("nowhere", "x")); err != nil {
		t.Errorf("create in a missing namespace: %v", err)
	}
}

// Namespaces default, kube-system and kube-public may not be deleted, by
// any writer; the others may, kube-node-lease too (as in Kubernetes).
func TestAdmitRefusesDeletingSystemNamespaces(t *testing.T) {
	s := newStore(t, Admit)
	ctx := context.Background()
	for _, name := range []string{api.NamespaceDefault, api.NamespaceSystem, api.NamespacePublic, api.NamespaceNodeLease, "team"} {
		create(t, s, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	for _, name := range []string{api.NamespaceDefault, api.NamespaceSystem, api.NamespacePublic} {
		_, err := s.Delete(ctx, namespaceKind, "", name, store.DeleteOptions{})
		if !store.IsForbidden(err) || !strings.Contains(err.Error(), "this namespace may not be deleted") {
			t.Errorf("delete namespace %s: %v", name, err)
		}
		if ns := getNamespace(s, name); ns == nil || ns.Terminating() {
			t.Errorf("namespace %s after the refused delete: %+v", name, ns)
		}
	}
	for _, name := range []string{api.NamespaceNodeLease, "team"} {
		if _, err := s.Delete(ctx, namespaceKind, "", name, store.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	}
}
