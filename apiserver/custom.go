package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/crd"
)

// Custom resources are served from the kinds their CRDs register (see
// package store): the same routes, admission chain and store as the
// built-in kinds, with their objects generic. What the CRD adds is here:
// each version's structural schema, which prunes unknown fields,
// defaults and validates (OpenAPI v3 and CEL rules, with
// apiextensions-apiserver's own code, package api/crd), and the version a client asked
// for, which every answer is given in (conversion None: only apiVersion
// differs).

// customVersionOf returns the checks of version v of a custom kind.
func customVersionOf(k *api.Kind, v string) (*crd.Version, error) {
	cv, err := crd.VersionOf(k, v)
	if err == nil && cv == nil {
		return nil, notFoundPath()
	}
	return cv, err
}

// customResource looks up a custom kind served at group/version/resource.
func customResource(group, version, resource string) *api.Kind {
	k, ok := api.CustomKind(schema.GroupResource{Group: group, Resource: resource})
	if !ok || !slices.Contains(k.Versions, version) {
		return nil
	}
	return k
}

var crdKind = api.KindOf(&api.CustomResourceDefinition{})

// servesCustom reports whether this server's store holds the CRD of a
// custom kind: the kinds are the process's, and a process may run more
// than one store (tests, simulations).
func (s *Server) servesCustom(k *api.Kind) bool {
	if k.CRD == nil {
		return false // a kind a client learned by discovery
	}
	_, err := s.store.Get(crdKind, "", k.CRD.Name)
	return err == nil
}

// versionOf is the version of a custom object, by its apiVersion.
func versionOf(u *unstructured.Unstructured) string {
	gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
	return gv.Version
}

// pruneAndDefault drops the fields a custom object's schema does not
// know and fills in its defaults, as Kubernetes decodes a custom resource.
// The fields dropped are returned: under fieldValidation Strict (berth's
// default) they refuse the request, under Warn they are warnings.
func pruneAndDefault(k *api.Kind, u *unstructured.Unstructured) ([]string, error) {
	cv, err := customVersionOf(k, versionOf(u))
	if err != nil {
		return nil, err
	}
	return cv.PruneAndDefault(u.Object), nil
}

// validateCustom checks a custom object against its version's schema and
// CEL rules; old is the stored object of an update.
func validateCustom(k *api.Kind, obj, old api.Object) field.ErrorList {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	cv, err := customVersionOf(k, versionOf(u))
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), err.Error())}
	}
	var oldObj map[string]any
	if o, ok := old.(*unstructured.Unstructured); ok {
		oldObj = o.Object
	}
	return cv.Validate(context.Background(), u.Object, oldObj)
}

// served returns obj in the version the request named: a custom object
// is stored in its CRD's storage version and served in any other with
// only its apiVersion changed (conversion None). Built-in objects, and
// custom ones asked for in their stored version, are obj itself.
func (req *resourceRequest) served(obj api.Object) api.Object {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || req.version == "" || versionOf(u) == req.version {
		return obj
	}
	out := &unstructured.Unstructured{Object: make(map[string]any, len(u.Object))}
	for key, v := range u.Object {
		out.Object[key] = v // shared below the top: stored objects never change
	}
	out.Object["apiVersion"] = schema.GroupVersion{Group: req.kind.GVK.Group, Version: req.version}.String()
	return out
}

// decodeCustomBody decodes a request body of a custom kind: one object,
// pruned and defaulted by its version's schema.
func (req *resourceRequest) decodeCustomBody(data []byte, validation string) (api.Object, []string, error) {
	k := req.kind
	objs, errs := api.DecodeStream("", withTypeMeta(req.pathKind(), data), api.DecodeOptions{DropStatus: req.ignoresStatus(), FieldValidation: validation})
	if len(errs) > 0 {
		return nil, nil, decodeFailed(k, errs)
	}
	if len(objs) != 1 || objs[0].Field != "" {
		return nil, nil, badRequest("the request body must hold exactly one %s, not a list or a stream of objects", k.GVK.Kind)
	}
	u, ok := objs[0].Object.(*unstructured.Unstructured)
	if got := api.KindOf(objs[0].Object); !ok || got != k {
		return nil, nil, badRequest("the object in the request body is a %s, not a %s (%s)",
			objs[0].Object.GetObjectKind().GroupVersionKind().Kind, k.GVK.Kind, k.GVK.Group)
	}
	unknown, err := pruneAndDefault(k, u)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	if len(unknown) > 0 {
		switch validation {
		case metav1.FieldValidationIgnore:
		case metav1.FieldValidationWarn:
			for _, p := range unknown {
				warnings = append(warnings, fmt.Sprintf("unknown field %q", p))
			}
		default:
			return nil, nil, badRequest("strict decoding error: unknown field %s", quoteAll(unknown))
		}
	}
	return u, warnings, nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", unknown field ")
}

// pathKind is the kind a request's path names, in the path's version: a
// body without apiVersion and kind gets them.
func (req *resourceRequest) pathKind() *api.Kind {
	if req.version == "" || req.version == req.kind.GVK.Version {
		return req.kind
	}
	k := *req.kind
	k.GVK.Version = req.version
	return &k
}
