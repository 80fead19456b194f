package apply

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
)

// gizmoCRD defines Gizmo in a group of this test's own: the custom kinds
// are the process's.
const gizmoCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.apply.example.com
spec:
  group: apply.example.com
  names: {kind: Gizmo, plural: gizmos}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            x-kubernetes-validations:
            - rule: "self.replicas <= 10"
              message: "at most 10 replicas"
            properties:
              size: {type: string, enum: [small, large]}
              replicas: {type: integer, minimum: 0, default: 1}
`

func gizmo(name, spec string) string {
	return fmt.Sprintf("apiVersion: apply.example.com/v1\nkind: Gizmo\nmetadata:\n  name: %s\nspec:\n%s\n", name, spec)
}

// decodeCustom decodes files as a source does: kinds of groups berth does
// not serve are custom resources to check against their CRDs.
func decodeCustom(t testing.TB, id string, files ...string) source.Revision {
	t.Helper()
	rev := source.Revision{ID: id}
	for i := 0; i < len(files); i += 2 {
		objs, errs := api.DecodeStream(files[i], []byte(files[i+1]), api.DecodeOptions{DropStatus: true, Kinds: api.UncheckedCustomKind})
		rev.Objects = append(rev.Objects, objs...)
		rev.Errors = append(rev.Errors, errs...)
	}
	return rev
}

// A revision that holds a CRD and objects of its kind applies the CRD
// first, then (the kind served) the objects with their schema's
// defaults; a later revision with an object that breaks the schema is
// held back whole, naming the file and field, and the first stays.
func TestApplyCRDAndItsObjectsInOneRevision(t *testing.T) {
	f := newFixture(t)
	t.Cleanup(func() { api.RemoveCustomKind(schema.GroupResource{Group: "apply.example.com", Resource: "gizmos"}) })
	before := f.backend.count()
	res := f.mustApply(decodeCustom(t, "r1", "crd.yaml", gizmoCRD, "gizmos.yaml", docs(gizmo("a", "  size: small"), configMap("c", "1"))))
	if c := res.Counts; c != (Counts{Created: 3}) || res.StoreRevision == 0 {
		t.Fatalf("counts %+v, store revision %d, want 3 created", c, res.StoreRevision)
	}
	if c := f.ready(); c.Message != "Applied revision r1: 3 created, 0 updated, 0 pruned, 0 unchanged" {
		t.Errorf("message %q", c.Message)
	}
	writes := f.backend.since(before)
	if len(writes) < 3 || writes[0] != "CustomResourceDefinition/gizmos.apply.example.com" {
		t.Fatalf("writes %v: the CRD first, in a commit of its own", writes)
	}
	k, ok := api.CustomKind(schema.GroupResource{Group: "apply.example.com", Resource: "gizmos"})
	if !ok {
		t.Fatal("the kind is not served")
	}
	obj, err := f.store.Get(k, "default", "a")
	if err != nil {
		t.Fatal(err)
	}
	u := obj.(*unstructured.Unstructured)
	if r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); r != 1 {
		t.Fatalf("spec.replicas %d, want the schema's default 1", r)
	}
	if u.GetAnnotations()[api.AnnotationSource] != fleet {
		t.Fatalf("annotations %v", u.GetAnnotations())
	}

	// The same revision again writes nothing but the Source's status.
	before = f.backend.count()
	if res := f.mustApply(decodeCustom(t, "r1", "crd.yaml", gizmoCRD, "gizmos.yaml", docs(gizmo("a", "  size: small"), configMap("c", "1")))); res.Counts.Unchanged != 3 {
		t.Fatalf("again: counts %+v", res.Counts)
	}
	if w := f.backend.since(before); len(w) != 1 || w[0] != "Source/fleet" {
		t.Fatalf("again: writes %v", w)
	}

	for _, c := range []struct{ spec, field, want string }{
		{"  size: medium", "spec.size", `Unsupported value: "medium"`},
		{"  size: small\n  replicas: 11", "spec", "at most 10 replicas"},
		{"  size: small\n  colour: red", "spec.colour", `unknown field "colour"`},
	} {
		res := f.apply(decodeCustom(t, "r2", "crd.yaml", gizmoCRD, "gizmos.yaml", docs(gizmo("a", "  size: small"), gizmo("b", c.spec))))
		if res.Ready || res.Reason != api.ReasonInvalidRevision {
			t.Fatalf("spec %q: %s %s, want the revision rejected", c.spec, res.Reason, res.Message)
		}
		found := false
		for _, e := range res.Errors {
			if e.File == "gizmos.yaml" && e.Doc == 1 && e.Field == c.field && strings.Contains(e.Message, c.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("spec %q: errors %v, want gizmos.yaml doc 1 %s: %s", c.spec, res.Errors, c.field, c.want)
		}
		if _, err := f.store.Get(k, "default", "b"); err == nil {
			t.Fatalf("spec %q: the invalid object was written", c.spec)
		}
	}
	if src := f.source(); src.Status.LastAppliedRevision != "r1" {
		t.Fatalf("last applied %q, want r1 still", src.Status.LastAppliedRevision)
	}

	// A CRD that gains a field, with an object that sets it: the CRD is
	// updated first, and the object checked against the new schema.
	withColour := strings.Replace(gizmoCRD, "              replicas:", "              colour: {type: string}\n              replicas:", 1)
	res = f.mustApply(decodeCustom(t, "r3", "crd.yaml", withColour, "gizmos.yaml", docs(gizmo("a", "  size: small\n  colour: red"), configMap("c", "1"))))
	if c := res.Counts; c != (Counts{Updated: 2, Unchanged: 1}) {
		t.Fatalf("r3: counts %+v", c)
	}
	k, _ = api.CustomKind(schema.GroupResource{Group: "apply.example.com", Resource: "gizmos"})
	obj, err = f.store.Get(k, "default", "a")
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _ := unstructured.NestedString(obj.(*unstructured.Unstructured).Object, "spec", "colour"); c != "red" {
		t.Fatalf("r3: spec.colour %q", c)
	}
}

// A custom resource whose CRD is neither in the revision nor installed
// rejects the revision, naming it.
func TestApplyCustomResourceWithoutCRD(t *testing.T) {
	f := newFixture(t)
	res := f.apply(decodeCustom(t, "r1", "gizmos.yaml", strings.ReplaceAll(gizmo("a", "  size: small"), "apply.example.com", "none.example.com")))
	if res.Ready || len(res.Errors) != 1 || res.Errors[0].Field != "kind" || !strings.Contains(res.Errors[0].Message, "no CustomResourceDefinition serves kind Gizmo in none.example.com/v1") {
		t.Fatalf("%s: %v", res.Message, res.Errors)
	}
}

// The status of a custom resource whose CRD has a status subresource is
// its controller's, as a built-in kind's is: writing it is no drift, and
// the next revision keeps it.
func TestCustomResourceStatusIsNoDrift(t *testing.T) {
	f := newFixture(t)
	t.Cleanup(func() { api.RemoveCustomKind(schema.GroupResource{Group: "apply.example.com", Resource: "gizmos"}) })
	f.mustApply(decodeCustom(t, "r1", "crd.yaml", gizmoCRD, "gizmos.yaml", gizmo("a", "  size: small")))
	k, ok := api.CustomKind(schema.GroupResource{Group: "apply.example.com", Resource: "gizmos"})
	if !ok {
		t.Fatal("the kind is not served")
	}
	obj, err := f.store.Get(k, "default", "a")
	if err != nil {
		t.Fatal(err)
	}
	u := obj.DeepCopyObject().(*unstructured.Unstructured)
	u.Object["status"] = map[string]any{"phase": "Ready"}
	if _, err := f.store.Update(f.ctx, u); err != nil {
		t.Fatal(err)
	}
	if corrected, err := f.applier.Correct(f.ctx, fleet, Key{Kind: k, Namespace: "default", Name: "a"}); err != nil || corrected {
		t.Fatalf("a controller's status is no drift: corrected %v, %v", corrected, err)
	}
	f.mustApply(decodeCustom(t, "r2", "crd.yaml", gizmoCRD, "gizmos.yaml", gizmo("a", "  size: large")))
	obj, err = f.store.Get(k, "default", "a")
	if err != nil {
		t.Fatal(err)
	}
	u = obj.(*unstructured.Unstructured)
	if p, _, _ := unstructured.NestedString(u.Object, "status", "phase"); p != "Ready" {
		t.Fatalf("after r2: status %v, want the controller's", u.Object["status"])
	}
	if s, _, _ := unstructured.NestedString(u.Object, "spec", "size"); s != "large" {
		t.Fatalf("after r2: spec.size %q", s)
	}
}
