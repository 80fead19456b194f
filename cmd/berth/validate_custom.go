package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/crd"
)

// berth validate checks custom resources against the
// CustomResourceDefinitions of the tree it reads, as the API server
// would once they are applied: the CRD's scope, a served version, and its
// structural schema (unknown fields, defaults, OpenAPI and CEL rules,
// with package crd). A custom resource whose CRD is not in the tree is
// not checked, and said so: its CRD may come from another source or be
// installed already.

// treeCRD is a CustomResourceDefinition found in the tree.
type treeCRD struct {
	def *crd.Definition
	// invalid says why the CRD cannot check its objects.
	invalid string
}

// uncheckedObject is a custom resource validate could not check, and why.
type uncheckedObject struct {
	d   *api.Decoded
	why string
}

func (u uncheckedObject) String() string {
	gvk := u.d.Kind().GVK
	return fmt.Sprintf("%s: %s %s not checked: %s", u.d.Location(), gvk.Kind, gvk.GroupVersion(), u.why)
}

// notInTree is why a custom resource whose CRD the tree does not hold is
// not checked.
const notInTree = "no CustomResourceDefinition for it in the tree"

// validateObjects defaults and validates decoded objects, the custom
// resources among them against the CRDs among them, and returns the
// errors and the custom resources it could not check.
func validateObjects(objs []*api.Decoded) (api.ErrorList, []uncheckedObject) {
	var errs api.ErrorList
	crds := map[schema.GroupKind]*treeCRD{}
	var custom []*api.Decoded
	for _, d := range objs {
		if _, ok := d.Object.(*unstructured.Unstructured); ok {
			custom = append(custom, d)
			continue
		}
		derrs := d.DefaultAndValidate()
		errs = append(errs, derrs...)
		c, ok := d.Object.(*api.CustomResourceDefinition)
		if !ok {
			continue
		}
		t := &treeCRD{def: crd.NewDefinition(c, d.Location())}
		if len(derrs) > 0 {
			t.invalid = fmt.Sprintf("its CustomResourceDefinition %s (%s) is invalid", c.Name, d.Location())
		} else if err := t.def.Err(); err != nil {
			t.invalid = fmt.Sprintf("its CustomResourceDefinition %s (%s): %v", c.Name, d.Location(), err)
		}
		crds[schema.GroupKind{Group: c.Spec.Group, Kind: c.Spec.Names.Kind}] = t
	}
	var unchecked []uncheckedObject
	for _, d := range custom {
		gvk := d.Kind().GVK
		t := crds[gvk.GroupKind()]
		switch {
		case t == nil:
			unchecked = append(unchecked, uncheckedObject{d, notInTree})
		case t.invalid != "":
			unchecked = append(unchecked, uncheckedObject{d, t.invalid})
		default:
			errs = append(errs, t.def.Check(context.Background(), d, d.Object.(*unstructured.Unstructured))...)
		}
	}
	return errs, unchecked
}
