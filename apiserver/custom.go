package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/berth-dev/berth/api"
)

// Custom resources are served from the kinds their CRDs register (see
// package store): the same routes, admission chain and store as the
// built-in kinds, with their objects generic. What the CRD adds is here:
// each version's structural schema, which prunes unknown fields,
// defaults and validates (OpenAPI v3 and CEL rules, with
// apiextensions-apiserver's own code), and the version a client asked
// for, which every answer is given in (conversion None: only apiVersion
// differs).

// customVersion is what a served version of a CRD checks objects with.
type customVersion struct {
	structural *structuralschema.Structural
	validator  apiextensionsvalidation.SchemaValidator
	cel        *cel.Validator
	def        *apiextensionsv1.CustomResourceDefinitionVersion
}

// customSchemas caches the versions of each custom kind; a CRD that
// changes registers a new kind, so an entry never goes stale.
var customSchemas sync.Map // *api.Kind → map[string]*customVersion (or error)

// customVersionOf returns the checks of version v of a custom kind.
func customVersionOf(k *api.Kind, v string) (*customVersion, error) {
	if cached, ok := customSchemas.Load(k); ok {
		return pickVersion(k, cached, v)
	}
	built, err := buildCustomVersions(k.CRD)
	var entry any = built
	if err != nil {
		entry = err
	}
	cached, _ := customSchemas.LoadOrStore(k, entry)
	return pickVersion(k, cached, v)
}

func pickVersion(k *api.Kind, cached any, v string) (*customVersion, error) {
	if err, ok := cached.(error); ok {
		return nil, err
	}
	cv := cached.(map[string]*customVersion)[v]
	if cv == nil {
		return nil, notFoundPath()
	}
	return cv, nil
}

func buildCustomVersions(crd *api.CustomResourceDefinition) (map[string]*customVersion, error) {
	in, err := api.ToInternalCRD(crd)
	if err != nil {
		return nil, err
	}
	out := map[string]*customVersion{}
	for i, v := range crd.Spec.Versions {
		cv := &customVersion{def: &crd.Spec.Versions[i]}
		var props *apiextensionsinternal.JSONSchemaProps
		if in.Spec.Versions[i].Schema != nil {
			props = in.Spec.Versions[i].Schema.OpenAPIV3Schema
		}
		if props != nil {
			if cv.structural, err = structuralschema.NewStructural(props); err != nil {
				return nil, fmt.Errorf("%s version %s: %w", crd.Name, v.Name, err)
			}
			if cv.validator, _, err = apiextensionsvalidation.NewSchemaValidator(props); err != nil {
				return nil, fmt.Errorf("%s version %s: %w", crd.Name, v.Name, err)
			}
			cv.cel = cel.NewValidator(cv.structural, true, celconfig.PerCallLimit)
		}
		out[v.Name] = cv
	}
	return out, nil
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
	if cv.structural == nil {
		return nil, nil
	}
	unknown := pruning.PruneWithOptions(u.Object, cv.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	defaulting.Default(u.Object, cv.structural)
	return unknown, nil
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
	if cv.validator == nil {
		return nil
	}
	errs := apiextensionsvalidation.ValidateCustomResource(nil, u.Object, cv.validator)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, cv.structural, u.Object)...)
	var oldObj any
	if o, ok := old.(*unstructured.Unstructured); ok {
		oldObj = o.Object
	}
	if cv.cel != nil {
		celErrs, _ := cv.cel.Validate(context.Background(), nil, cv.structural, u.Object, oldObj, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
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
