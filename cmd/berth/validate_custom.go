package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

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

// uncheckedKinds resolves, for the decoder, a kind of a group berth does
// not serve as a custom resource to check later. Groups of Kubernetes'
// own (k8s.io) and berth's are not: a kind there that berth does not
// serve stays an error.
func uncheckedKinds(gvk schema.GroupVersionKind) *api.Kind {
	g := gvk.Group
	if !strings.Contains(g, ".") || g == "k8s.io" || strings.HasSuffix(g, ".k8s.io") {
		return nil
	}
	if slices.ContainsFunc(api.Kinds(), func(k *api.Kind) bool { return k.GVK.Group == g }) {
		return nil
	}
	return api.UncheckedKind(gvk)
}

// treeCRD is a CustomResourceDefinition found in the tree.
type treeCRD struct {
	d        *api.Decoded
	crd      *api.CustomResourceDefinition
	kind     *api.Kind
	versions map[string]*crd.Version
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

// validateObjects defaults and validates decoded objects, the custom
// resources among them against the CRDs among them, and returns the
// errors and the custom resources it could not check.
func validateObjects(objs []*api.Decoded) (api.ErrorList, []uncheckedObject) {
	var errs api.ErrorList
	crds := map[schema.GroupKind]*treeCRD{}
	var custom []*api.Decoded
	for _, d := range objs {
		if k := d.Kind(); k != nil && k.Custom && k.CRD == nil {
			custom = append(custom, d)
			continue
		}
		derrs := d.DefaultAndValidate()
		errs = append(errs, derrs...)
		c, ok := d.Object.(*api.CustomResourceDefinition)
		if !ok {
			continue
		}
		t := &treeCRD{d: d, crd: c, kind: api.CustomKindOf(c)}
		if len(derrs) > 0 {
			t.invalid = fmt.Sprintf("its CustomResourceDefinition %s (%s) is invalid", c.Name, d.Location())
		} else if vs, err := crd.Versions(c); err != nil {
			t.invalid = fmt.Sprintf("its CustomResourceDefinition %s (%s): %v", c.Name, d.Location(), err)
		} else {
			t.versions = vs
		}
		crds[schema.GroupKind{Group: c.Spec.Group, Kind: c.Spec.Names.Kind}] = t
	}
	var unchecked []uncheckedObject
	for _, d := range custom {
		gvk := d.Kind().GVK
		t := crds[gvk.GroupKind()]
		switch {
		case t == nil:
			unchecked = append(unchecked, uncheckedObject{d, "no CustomResourceDefinition for it in the tree"})
		case t.invalid != "":
			unchecked = append(unchecked, uncheckedObject{d, t.invalid})
		default:
			errs = append(errs, t.check(d)...)
		}
	}
	return errs, unchecked
}

// check checks a custom resource against the CRD, as the API server
// checks a create: a served version, its metadata for the CRD's scope,
// no field the schema does not know, the schema's defaults, then its
// OpenAPI and CEL rules.
func (t *treeCRD) check(d *api.Decoded) api.ErrorList {
	u := d.Object.(*unstructured.Unstructured)
	gvk := d.Kind().GVK
	v := api.CRDVersion(t.crd, gvk.Version)
	if v == nil || !v.Served {
		var served []string
		for _, v := range t.crd.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
		}
		return api.ErrorList{d.ErrorAt("apiVersion", fmt.Sprintf("Unsupported value: %q: the CustomResourceDefinition %s (%s) serves %s",
			u.GetAPIVersion(), t.crd.Name, t.d.Location(), strings.Join(served, ", ")))}
	}
	var errs api.ErrorList
	schema := t.versions[gvk.Version]
	for _, p := range schema.PruneAndDefault(u.Object) {
		name := p[strings.LastIndex(p, ".")+1:]
		errs = append(errs, d.ErrorAt(p, fmt.Sprintf("unknown field %q", name)))
	}
	errs = append(errs, d.DefaultAndValidateAs(t.kind)...)
	return append(errs, d.Errors(schema.Validate(context.Background(), u.Object, nil))...)
}
