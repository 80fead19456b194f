package crd

import (
	"context"
	"fmt"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/berth-dev/berth/api"
)

// Version is what one version of a CRD checks its objects with. A
// version without a schema checks nothing (Kubernetes allows none only
// in apiextensions/v1beta1, but a Version of it is still usable).
type Version struct {
	// Name is the version's name ("v1").
	Name       string
	structural *structuralschema.Structural
	validator  apiextensionsvalidation.SchemaValidator
	cel        *cel.Validator
}

// Versions builds the checks of every version of a CRD, by name. A CRD
// whose schema is not structural has none: the API refuses such a CRD
// with Kubernetes' message, and so does validation.
func Versions(crd *api.CustomResourceDefinition) (map[string]*Version, error) {
	in, err := api.ToInternalCRD(crd)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Version, len(crd.Spec.Versions))
	for i, v := range crd.Spec.Versions {
		cv := &Version{Name: v.Name}
		var props *apiextensionsinternal.JSONSchemaProps
		if s := in.Spec.Versions[i].Schema; s != nil {
			props = s.OpenAPIV3Schema
		} else if in.Spec.Validation != nil {
			props = in.Spec.Validation.OpenAPIV3Schema
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

// cache keeps the versions of each custom kind; a CRD that changes
// registers a new kind, so an entry never goes stale.
var cache sync.Map // *api.Kind → map[string]*Version (or error)

// VersionOf returns the checks of version v of a custom kind, built once
// per kind; nil, with no error, when the CRD has no such version.
func VersionOf(k *api.Kind, v string) (*Version, error) {
	cached, ok := cache.Load(k)
	if !ok {
		built, err := Versions(k.CRD)
		var entry any = built
		if err != nil {
			entry = err
		}
		cached, _ = cache.LoadOrStore(k, entry)
	}
	if err, ok := cached.(error); ok {
		return nil, err
	}
	return cached.(map[string]*Version)[v], nil
}

// PruneAndDefault drops the fields of obj (a custom object's content)
// that the schema does not know and fills in its defaults, as Kubernetes
// decodes a custom resource. It returns the paths of the fields dropped:
// under fieldValidation Strict they refuse a request.
func (v *Version) PruneAndDefault(obj map[string]any) []string {
	if v == nil || v.structural == nil {
		return nil
	}
	unknown := pruning.PruneWithOptions(obj, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	defaulting.Default(obj, v.structural)
	return unknown
}

// Validate checks obj against the schema and its CEL rules; old is the
// stored object of an update (nil otherwise), for transition rules.
func (v *Version) Validate(ctx context.Context, obj, old map[string]any) field.ErrorList {
	if v == nil || v.validator == nil {
		return nil
	}
	errs := apiextensionsvalidation.ValidateCustomResource(nil, obj, v.validator)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	if v.cel != nil {
		var oldObj any
		if old != nil {
			oldObj = old
		}
		celErrs, _ := v.cel.Validate(ctx, nil, v.structural, obj, oldObj, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}
