package crd

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
)

// Definition is a CustomResourceDefinition ready to check its objects as
// the API server checks a create: one a tree or a revision holds (so
// that its objects are checked before it is applied) or one installed.
type Definition struct {
	// CRD is the definition, defaulted.
	CRD *api.CustomResourceDefinition
	// Kind is the kind it defines: the registered kind of an installed
	// CRD, CustomKindOf of one not (yet) registered.
	Kind *api.Kind
	// At says where a CRD of a tree or revision is ("crd.yaml:doc 0
	// (line 1)"); empty for an installed one.
	At string

	versions func() (map[string]*Version, error)
}

// NewDefinition is the Definition of a CRD found at at (a file and
// document); its schemas are built the first time an object needs them.
// When the kind registered for its resource is this very CRD (same
// spec), that kind is used, with its schemas built once per process.
func NewDefinition(c *api.CustomResourceDefinition, at string) *Definition {
	if k := Installed(c); k != nil {
		return &Definition{CRD: c, Kind: k, At: at, versions: func() (map[string]*Version, error) { return versionsOf(k) }}
	}
	def := &Definition{CRD: c, Kind: api.CustomKindOf(c), At: at}
	var (
		built map[string]*Version
		err   error
		done  bool
	)
	def.versions = func() (map[string]*Version, error) {
		if !done {
			built, err = Versions(c)
			done = true
		}
		return built, err
	}
	return def
}

// Definitions collects the CRDs among decoded objects (a revision, a
// tree of manifests) by the group and kind they define, each a defaulted
// copy (a decoded object may be shared with a decode cache). A CRD that
// is invalid is left out: its own validation says why, and its objects
// are not checked against it.
func Definitions(objs []*api.Decoded) map[schema.GroupKind]*Definition {
	var out map[schema.GroupKind]*Definition
	for _, d := range objs {
		c, ok := d.Object.(*api.CustomResourceDefinition)
		if !ok {
			continue
		}
		c = c.DeepCopy()
		api.Default(c)
		if len(api.Validate(c)) > 0 {
			continue
		}
		if out == nil {
			out = map[schema.GroupKind]*Definition{}
		}
		out[schema.GroupKind{Group: c.Spec.Group, Kind: c.Spec.Names.Kind}] = NewDefinition(c, d.Location())
	}
	return out
}

// Installed returns the kind registered for c's resource when its CRD has
// c's spec, nil otherwise: objects of c can then be written now, without
// c being applied first.
func Installed(c *api.CustomResourceDefinition) *api.Kind {
	k, ok := api.CustomKind(schema.GroupResource{Group: c.Spec.Group, Resource: c.Spec.Names.Plural})
	if !ok || k.CRD.Name != c.Name || !equality.Semantic.DeepEqual(k.CRD.Spec, c.Spec) {
		return nil
	}
	return k
}

// DefinitionOf is the Definition of an installed custom kind.
func DefinitionOf(k *api.Kind) *Definition {
	return &Definition{CRD: k.CRD, Kind: k, versions: func() (map[string]*Version, error) { return versionsOf(k) }}
}

// Err builds the definition's schemas and says why they cannot check
// objects (a schema that is not structural), or nil.
func (def *Definition) Err() error {
	_, err := def.versions()
	return err
}

// Check checks obj, a copy of the custom resource d decoded that Check
// may change, against the definition: a version the CRD serves, no field
// its schema does not know, its defaults filled in (the schema's, then
// the metadata's for the CRD's scope), then its OpenAPI and CEL rules.
// Every error is placed in d's file.
func (def *Definition) Check(ctx context.Context, d *api.Decoded, obj *unstructured.Unstructured) api.ErrorList {
	version := obj.GroupVersionKind().Version
	v := api.CRDVersion(def.CRD, version)
	if v == nil || !v.Served {
		var served []string
		for _, v := range def.CRD.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
		}
		return api.ErrorList{d.ErrorAt("apiVersion", fmt.Sprintf("Unsupported value: %q: the CustomResourceDefinition %s%s serves %s",
			obj.GetAPIVersion(), def.CRD.Name, def.where(), strings.Join(served, ", ")))}
	}
	versions, err := def.versions()
	if err != nil {
		return api.ErrorList{d.ErrorAt("apiVersion", fmt.Sprintf("Invalid value: %q: the CustomResourceDefinition %s%s cannot check it: %v",
			obj.GetAPIVersion(), def.CRD.Name, def.where(), err))}
	}
	var errs api.ErrorList
	schema := versions[version]
	for _, p := range schema.PruneAndDefault(obj.Object) {
		name := p[strings.LastIndex(p, ".")+1:]
		errs = append(errs, d.ErrorAt(p, fmt.Sprintf("unknown field %q", name)))
	}
	errs = append(errs, d.DefaultAndValidateObjectAs(obj, def.Kind)...)
	return append(errs, d.Errors(schema.Validate(ctx, obj.Object, nil))...)
}

// where is " (FILE:doc N)" for a CRD of a tree, "" for an installed one.
func (def *Definition) where() string {
	if def.At == "" {
		return ""
	}
	return " (" + def.At + ")"
}

// versionsOf returns the checks of every version of a registered custom
// kind, built once per kind (see VersionOf).
func versionsOf(k *api.Kind) (map[string]*Version, error) {
	if _, err := VersionOf(k, k.GVK.Version); err != nil {
		return nil, err
	}
	cached, _ := cache.Load(k)
	return cached.(map[string]*Version), nil
}
