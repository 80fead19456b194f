package store

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// TestOrphanIndex checks that IndexOrphan holds exactly the pods without a
// controller, by namespace, and follows an adoption.
func TestOrphanIndex(t *testing.T) {
	ctx := context.Background()
	s, err := New(Memory{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	podKind := api.KindOf(&api.Pod{})
	yes := true
	pod := func(ns, name string, controlled bool) *api.Pod {
		p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if controlled {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1", Controller: &yes}}
		}
		return p
	}
	for _, p := range []*api.Pod{pod("a", "orphan", false), pod("a", "owned", true), pod("b", "other", false)} {
		if _, err := s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	orphans := func(ns string) []string {
		objs, _, err := s.List(podKind, Filter{Index: IndexOrphan, Value: ns})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range objs {
			names = append(names, o.GetNamespace()+"/"+o.GetName())
		}
		return names
	}
	if got := orphans("a"); len(got) != 1 || got[0] != "a/orphan" {
		t.Errorf("orphans of a: %v", got)
	}
	if got := orphans("b"); len(got) != 1 || got[0] != "b/other" {
		t.Errorf("orphans of b: %v", got)
	}
	obj, err := s.Get(podKind, "a", "orphan")
	if err != nil {
		t.Fatal(err)
	}
	adopted := obj.(*api.Pod).DeepCopy()
	adopted.OwnerReferences = pod("a", "orphan", true).OwnerReferences
	if _, err := s.Update(ctx, adopted); err != nil {
		t.Fatal(err)
	}
	if got := orphans("a"); len(got) != 0 {
		t.Errorf("orphans of a after adoption: %v", got)
	}
}
