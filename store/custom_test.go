package store_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/bolt"
)

// testCRD defines kind Gadget (gadgets) in group, namespaced.
func testCRD(group string) *api.CustomResourceDefinition {
	return &api.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr(true),
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

func gadget(group, ns, name string, size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Gadget",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"size": size},
	}}
	return u
}

// A CRD's kind is served from its commit on; its objects live in the
// store's custom table, survive a restart of a bolt store, list by
// namespace, and go with their CRD.
func TestCustomResourcesInBolt(t *testing.T) {
	ctx := context.Background()
	const group = "store-test.example.com"
	path := filepath.Join(t.TempDir(), "berth.db")
	open := func() *store.Store {
		b, err := bolt.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := store.New(b, store.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	if _, err := s.Create(ctx, gadget(group, "default", "early", 1)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("create before the CRD: %v, want invalid", err)
	}
	out, err := s.Create(ctx, testCRD(group))
	if err != nil {
		t.Fatal(err)
	}
	crd := out.(*api.CustomResourceDefinition)
	if !established(crd) {
		t.Fatalf("conditions %+v, want NamesAccepted and Established", crd.Status.Conditions)
	}
	k, ok := api.CustomKind(schema.GroupResource{Group: group, Resource: "gadgets"})
	if !ok {
		t.Fatal("kind not registered")
	}
	for _, g := range []*unstructured.Unstructured{gadget(group, "default", "a", 1), gadget(group, "default", "b", 2), gadget(group, "other", "a", 3)} {
		if _, err := s.Create(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	// A change to the spec counts a generation; one to the status does not.
	got, _ := s.Get(k, "default", "a")
	u := got.DeepCopyObject().(*unstructured.Unstructured)
	_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "size")
	if got, err = s.Update(ctx, u); err != nil || got.GetGeneration() != 2 {
		t.Fatalf("update spec: generation %d, %v", got.GetGeneration(), err)
	}
	u = got.DeepCopyObject().(*unstructured.Unstructured)
	_ = unstructured.SetNestedField(u.Object, "ready", "status", "phase")
	if got, err = s.Update(ctx, u); err != nil || got.GetGeneration() != 2 {
		t.Fatalf("update status: generation %d, %v", got.GetGeneration(), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open()
	defer s.Close()
	k, ok = api.CustomKind(schema.GroupResource{Group: group, Resource: "gadgets"})
	if !ok {
		t.Fatal("kind not registered after a restart")
	}
	objs, _, err := s.List(k, store.Filter{Namespace: "default"})
	if err != nil || len(objs) != 2 {
		t.Fatalf("list default: %d objects, %v", len(objs), err)
	}
	a := objs[0].(*unstructured.Unstructured)
	if size, _, _ := unstructured.NestedInt64(a.Object, "spec", "size"); size != 5 || a.GetName() != "a" {
		t.Fatalf("after restart: %v", a.Object)
	}
	all, _, _ := s.List(k, store.Filter{})
	if len(all) != 3 {
		t.Fatalf("list all: %d objects, want 3", len(all))
	}
	// Objects of another kind in the same table are not this kind's.
	if cms, _, _ := s.List(api.MustLookupResource("configmaps"), store.Filter{}); len(cms) != 0 {
		t.Fatalf("configmaps: %d", len(cms))
	}
	if _, err := s.Delete(ctx, api.KindOf(&api.CustomResourceDefinition{}), "", "gadgets."+group, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := api.CustomKind(schema.GroupResource{Group: group, Resource: "gadgets"}); ok {
		t.Fatal("kind still registered after its CRD went")
	}
	if left, _, _ := s.List(k, store.Filter{}); len(left) != 0 {
		t.Fatalf("%d objects left after their CRD went", len(left))
	}
}

// A second CRD claiming a kind of the same group is not accepted.
func TestCustomResourceNameConflict(t *testing.T) {
	ctx := context.Background()
	const group = "conflict.example.com"
	s, err := store.New(store.Memory{}, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer func() {
		_, _ = s.Delete(ctx, api.KindOf(&api.CustomResourceDefinition{}), "", "gadgets."+group, store.DeleteOptions{})
	}()
	if _, err := s.Create(ctx, testCRD(group)); err != nil {
		t.Fatal(err)
	}
	other := testCRD(group)
	other.Name = "widgets." + group
	other.Spec.Names.Plural, other.Spec.Names.Singular = "widgets", "widget"
	out, err := s.Create(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if established(out.(*api.CustomResourceDefinition)) {
		t.Fatal("a CRD of a kind already taken was established")
	}
	k, _ := api.CustomKind(schema.GroupResource{Group: group, Resource: "gadgets"})
	if k == nil || k.Resource != "gadgets" {
		t.Fatalf("kind %v, want the first CRD's", k)
	}
}

func established(crd *api.CustomResourceDefinition) bool {
	n := 0
	for _, c := range crd.Status.Conditions {
		if (c.Type == api.CRDEstablished || c.Type == api.CRDNamesAccepted) && c.Status == apiextensionsv1.ConditionTrue {
			n++
		}
	}
	return n == 2
}

// A fork serves the kinds of the CRDs written to it, and only it: the
// process does not learn them, a CRD the fork changes leaves the
// process's kind (and so the live objects' checks) as it was, and one the
// fork deletes is gone from the fork alone.
func TestForkServesItsOwnCustomKinds(t *testing.T) {
	ctx := context.Background()
	live, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	const (
		newGroup  = "fork-new.example.com"
		liveGroup = "fork-live.example.com"
	)
	if _, err := live.Create(ctx, testCRD(liveGroup)); err != nil {
		t.Fatal(err)
	}
	liveGR := schema.GroupResource{Group: liveGroup, Resource: "gadgets"}
	liveKind, ok := api.CustomKind(liveGR)
	if !ok {
		t.Fatal("the live CRD's kind is not registered")
	}
	if _, err := live.Create(ctx, gadget(liveGroup, "default", "kept", 1)); err != nil {
		t.Fatal(err)
	}

	fork := live.Fork(store.Options{})
	defer fork.Close()
	newGR := schema.GroupResource{Group: newGroup, Resource: "gadgets"}
	if _, err := fork.Create(ctx, testCRD(newGroup)); err != nil {
		t.Fatal(err)
	}
	if _, ok := fork.CustomKind(newGR); !ok {
		t.Fatal("the fork does not serve the kind of the CRD written to it")
	}
	if _, err := fork.Create(ctx, gadget(newGroup, "default", "g", 1)); err != nil {
		t.Fatalf("create an object of the fork's CRD in the fork: %v", err)
	}
	if _, ok := api.CustomKind(newGR); ok {
		t.Fatal("a CRD written to a fork registered its kind for the whole process")
	}
	if _, ok := live.CustomKind(newGR); ok {
		t.Fatal("the live store serves the kind of a fork's CRD")
	}
	if _, err := live.Create(ctx, gadget(newGroup, "default", "g", 1)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("create in the live store of a kind only a fork serves: %v, want ErrInvalid", err)
	}

	// A changed CRD: the fork serves the new kind, the process the old.
	changed := testCRD(liveGroup)
	cur, err := fork.Get(api.KindOf(changed), "", changed.Name)
	if err != nil {
		t.Fatal(err)
	}
	changed.ResourceVersion = cur.GetResourceVersion()
	changed.Spec.Versions[0].Served = false
	changed.Spec.Versions = append(changed.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
		Name: "v2", Served: true, Schema: changed.Spec.Versions[0].Schema,
	})
	changed.Spec.Versions[0].Storage, changed.Spec.Versions[1].Storage = false, true
	if _, err := fork.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if k, ok := fork.CustomKind(liveGR); !ok || k == liveKind || k.GVK.Version != "v2" {
		t.Fatalf("the fork's kind of its changed CRD: %v, %v", k, ok)
	}
	if k, ok := api.CustomKind(liveGR); !ok || k != liveKind {
		t.Fatalf("a CRD changed in a fork changed the process's kind: %v", k)
	}
	select {
	case <-liveKind.Replaced():
		t.Fatal("a CRD changed in a fork ended the watches of the process's kind")
	default:
	}
	if _, err := live.Get(liveKind, "default", "kept"); err != nil {
		t.Fatalf("the live object: %v", err)
	}

	// A deleted CRD goes from the fork alone.
	if _, err := fork.Delete(ctx, api.KindOf(changed), "", changed.Name, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := fork.CustomKind(liveGR); ok {
		t.Fatal("the fork still serves the kind of a CRD it deleted")
	}
	if _, err := fork.Get(liveKind, "default", "kept"); !store.IsNotFound(err) {
		t.Fatalf("an object of a CRD the fork deleted, in the fork: %v", err)
	}
	if k, ok := live.CustomKind(liveGR); !ok || k != liveKind {
		t.Fatalf("a CRD deleted in a fork went from the process: %v", k)
	}
	if _, err := live.Get(liveKind, "default", "kept"); err != nil {
		t.Fatalf("the live object, after its CRD went from a fork: %v", err)
	}
}
