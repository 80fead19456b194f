package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
)

// call is one hook invocation as the hook saw it.
type call struct {
	kind, name string
	obj, old   bool
	deleting   bool
}

func (c call) String() string {
	return fmt.Sprintf("%s/%s obj=%t old=%t deleting=%t", c.kind, c.name, c.obj, c.old, c.deleting)
}

func newAdmitStore(t *testing.T, hooks ...AdmitFunc) *Store {
	t.Helper()
	s, err := New(Memory{}, Options{
		Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		Admit: hooks,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestAdmitSeesEveryWrite checks that the hook is called for each kind of
// write with the object as it will be stored and as it was.
func TestAdmitSeesEveryWrite(t *testing.T) {
	var calls []string
	s := newAdmitStore(t, func(tx *Txn, k *api.Kind, obj, old api.Object) error {
		c := call{kind: k.Resource, obj: obj != nil, old: old != nil}
		if obj != nil {
			c.name = obj.GetName()
			c.deleting = obj.GetDeletionTimestamp() != nil
		} else {
			c.name = old.GetName()
		}
		calls = append(calls, c.String())
		return nil
	})
	ctx := context.Background()
	if _, err := s.Create(ctx, pod("default", "web", "n1")); err != nil {
		t.Fatal(err)
	}
	obj, _ := s.Get(podKind, "default", "web")
	p := obj.(*api.Pod).DeepCopy()
	p.Labels["tier"] = "front"
	if _, err := s.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	// An update that changes nothing writes nothing and calls no hook.
	if _, err := s.Update(ctx, p.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	// A pod on a node is marked first, then removed.
	if _, err := s.Delete(ctx, podKind, "default", "web", DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	if _, err := s.Delete(ctx, podKind, "default", "web", DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	// An object held by a finalizer goes when an update removes it.
	cm := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg", Finalizers: []string{"x/y"}}}
	if _, err := s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, cmKind, "default", "cfg", DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	obj, _ = s.Get(cmKind, "default", "cfg")
	held := obj.(*api.ConfigMap).DeepCopy()
	held.Finalizers = nil
	if _, err := s.Update(ctx, held); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pods/web obj=true old=false deleting=false",
		"pods/web obj=true old=true deleting=false",
		"pods/web obj=true old=true deleting=true",
		"pods/web obj=false old=true deleting=false",
		"configmaps/cfg obj=true old=false deleting=false",
		"configmaps/cfg obj=true old=true deleting=true",
		"configmaps/cfg obj=false old=true deleting=false",
	}
	if got := strings.Join(calls, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("hook calls:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestAdmitRefusalAbortsTransaction checks that a refusal leaves nothing
// written, and that the hook sees, and may add to, the transaction's own
// writes.
func TestAdmitRefusalAbortsTransaction(t *testing.T) {
	// At most two config maps per namespace, counted through the
	// transaction, with a tally written beside them.
	limit := func(tx *Txn, k *api.Kind, obj, old api.Object) error {
		if k != cmKind || obj == nil || old != nil || obj.GetName() == "tally" {
			return nil
		}
		n := 0
		if err := tx.Each(cmKind, Filter{Namespace: obj.GetNamespace()}, func(o api.Object) bool {
			if o.GetName() != "tally" {
				n++
			}
			return true
		}); err != nil {
			return err
		}
		if n >= 2 {
			return objectError(ErrForbidden, k, obj.GetNamespace(), obj.GetName(), "too many config maps")
		}
		tally := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: "tally"}, Data: map[string]string{"n": fmt.Sprint(n + 1)}}
		if _, err := tx.Get(cmKind, obj.GetNamespace(), "tally"); err == nil {
			_, err = tx.Update(tally)
			return err
		}
		_, err := tx.Create(tally)
		return err
	}
	s := newAdmitStore(t, limit)
	ctx := context.Background()
	cm := func(ns, name string) *api.ConfigMap {
		return &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	// Three in one transaction: the hook sees the first two, refuses the
	// third, and nothing of the transaction is kept.
	rev := s.Revision()
	_, err := s.Txn(ctx, func(tx *Txn) error {
		for _, name := range []string{"a", "b", "c"} {
			if _, err := tx.Create(cm("default", name)); err != nil {
				return err
			}
		}
		return nil
	})
	var oe *ObjectError
	if !IsForbidden(err) || !errors.As(err, &oe) || oe.Name != "c" || oe.Detail != "too many config maps" {
		t.Fatalf("third create: %v, want forbidden naming c", err)
	}
	if s.Revision() != rev {
		t.Fatalf("revision moved %d → %d after a refused transaction", rev, s.Revision())
	}
	if objs, _, _ := s.List(cmKind, Filter{}); len(objs) != 0 {
		t.Fatalf("%d config maps kept from a refused transaction", len(objs))
	}
	// One at a time: the tally the hook writes commits with each.
	for _, name := range []string{"a", "b"} {
		if _, err := s.Create(ctx, cm("default", name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, cm("default", "c")); !IsForbidden(err) {
		t.Fatalf("third create: %v, want forbidden", err)
	}
	obj, err := s.Get(cmKind, "default", "tally")
	if err != nil || obj.(*api.ConfigMap).Data["n"] != "2" {
		t.Fatalf("tally %v, %v; want n=2", obj, err)
	}
	if _, err := s.Create(ctx, cm("other", "a")); err != nil {
		t.Fatalf("another namespace: %v", err)
	}
}
