package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CustomResourceDefinition is Kubernetes' own type: berth stores and
// validates it with apiextensions-apiserver's code, so that a CRD means
// here what it means there.
type CustomResourceDefinition = apiextensionsv1.CustomResourceDefinition

// ApiextensionsV1 serves CustomResourceDefinition.
var ApiextensionsV1 = schema.GroupVersion{Group: "apiextensions.k8s.io", Version: "v1"}

// Conditions of a CustomResourceDefinition, and the reasons berth gives.
const (
	CRDEstablished   = apiextensionsv1.Established
	CRDNamesAccepted = apiextensionsv1.NamesAccepted
	// ReasonNoConflicts and ReasonInitialNamesAccepted are Kubernetes'
	// reasons for accepted names and an established resource.
	ReasonNoConflicts          = "NoConflicts"
	ReasonInitialNamesAccepted = "InitialNamesAccepted"
	ReasonNameConflict         = "NameConflict"
	ReasonNotAccepted          = "NotAccepted"
)

// unstructuredType is the Go type of every custom resource: a generic
// object, as the architecture keeps them.
var unstructuredType = reflect.TypeOf(unstructured.Unstructured{})

// CRDName is the name a CustomResourceDefinition must have: its plural
// and its group, as "widgets.example.com".
func CRDName(group, plural string) string { return plural + "." + group }

// StorageVersion is the version of a CRD whose objects the store keeps;
// empty when none is marked (validation refuses such a CRD).
func StorageVersion(crd *CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// CRDVersion returns the version named v of a CRD, or nil (nil too for
// no CRD, as a DiscoveredKind has).
func CRDVersion(crd *CustomResourceDefinition, v string) *apiextensionsv1.CustomResourceDefinitionVersion {
	if crd == nil {
		return nil
	}
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == v {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// CustomKindOf is the kind a CustomResourceDefinition defines, keyed by
// its storage version: every served version finds the same kind, and the
// API server answers in the version asked for (conversion None).
func CustomKindOf(crd *CustomResourceDefinition) *Kind {
	n := crd.Spec.Names
	singular := n.Singular
	if singular == "" {
		singular = strings.ToLower(n.Kind)
	}
	k := &Kind{
		GVK:        schema.GroupVersionKind{Group: crd.Spec.Group, Version: StorageVersion(crd), Kind: n.Kind},
		Resource:   n.Plural,
		Singular:   singular,
		ShortNames: slices.Clone(n.ShortNames),
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		Categories: slices.Clone(n.Categories),
		Generation: true,
		Custom:     true,
		CRD:        crd,
		typ:        unstructuredType,
	}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			k.Versions = append(k.Versions, v.Name)
		}
		if v.Name == k.GVK.Version && v.Subresources != nil && v.Subresources.Status != nil {
			k.HasStatus = true
		}
	}
	return k
}

// DiscoveredKind is the kind of a custom resource as API discovery
// describes it, for a client that may read its objects but not its CRD:
// r as a version of group lists it, served in versions, preferred (the
// one a client asks for) first. It has no CRD, so no schema and no
// printer columns.
func DiscoveredKind(group string, versions []string, r metav1.APIResource) *Kind {
	singular := r.SingularName
	if singular == "" {
		singular = strings.ToLower(r.Kind)
	}
	return &Kind{
		GVK:        schema.GroupVersionKind{Group: group, Version: versions[0], Kind: r.Kind},
		Resource:   r.Name,
		Singular:   singular,
		ShortNames: slices.Clone(r.ShortNames),
		Namespaced: r.Namespaced,
		Categories: slices.Clone(r.Categories),
		Generation: true,
		Custom:     true,
		Versions:   slices.Clone(versions),
		typ:        unstructuredType,
	}
}

// sameKind reports whether two custom kinds are the same in every field
// a reader sees (its CRD's spec among them), so that a CRD's status
// update keeps its kind.
func sameKind(a, b *Kind) bool {
	return a.GVK == b.GVK && a.Resource == b.Resource && a.Singular == b.Singular &&
		slices.Equal(a.ShortNames, b.ShortNames) && a.Namespaced == b.Namespaced &&
		a.HasStatus == b.HasStatus && slices.Equal(a.Categories, b.Categories) &&
		slices.Equal(a.Versions, b.Versions) && (a.CRD == nil) == (b.CRD == nil) &&
		(a.CRD == nil || equality.Semantic.DeepEqual(a.CRD.Spec, b.CRD.Spec))
}

// customKinds are the kinds CustomResourceDefinitions define, kept by the
// store as it writes, loads and follows CRDs. A CRD that changes gets a
// new *Kind; the old one's Replaced channel closes, so that watches of it
// end, as Kubernetes ends them when a CRD changes.
var customKinds = struct {
	sync.RWMutex
	// generation counts the changes, for caches of what they list.
	generation uint64
	byGR       map[schema.GroupResource]*Kind
	byGVK      map[schema.GroupVersionKind]*Kind
	byName     map[string]*Kind
}{
	byGR:   map[schema.GroupResource]*Kind{},
	byGVK:  map[schema.GroupVersionKind]*Kind{},
	byName: map[string]*Kind{},
}

// SetCustomKind makes k (from CustomKindOf) the kind of its resource, and
// returns the kind now registered: the one already there when nothing
// changed.
func SetCustomKind(k *Kind) *Kind {
	customKinds.Lock()
	defer customKinds.Unlock()
	gr := k.GroupResource()
	if old := customKinds.byGR[gr]; old != nil {
		if sameKind(old, k) {
			return old
		}
		removeCustomLocked(old)
	}
	k.replaced = make(chan struct{})
	customKinds.generation++
	customKinds.byGR[gr] = k
	for _, v := range k.Versions {
		customKinds.byGVK[schema.GroupVersionKind{Group: k.GVK.Group, Version: v, Kind: k.GVK.Kind}] = k
	}
	customKinds.byGVK[k.GVK] = k
	for _, n := range append([]string{k.Resource, k.Singular}, k.ShortNames...) {
		n = strings.ToLower(n)
		customKinds.byName[n+"."+k.GVK.Group] = k
		if _, builtin := byName[n]; !builtin {
			customKinds.byName[n] = k
		}
	}
	return k
}

// RemoveCustomKind forgets the kind of a resource whose CRD is gone.
func RemoveCustomKind(gr schema.GroupResource) {
	customKinds.Lock()
	defer customKinds.Unlock()
	if old := customKinds.byGR[gr]; old != nil {
		removeCustomLocked(old)
	}
}

func removeCustomLocked(k *Kind) {
	customKinds.generation++
	delete(customKinds.byGR, k.GroupResource())
	for key, v := range customKinds.byGVK {
		if v == k {
			delete(customKinds.byGVK, key)
		}
	}
	for key, v := range customKinds.byName {
		if v == k {
			delete(customKinds.byName, key)
		}
	}
	close(k.replaced)
}

// CustomGeneration changes whenever a custom kind is registered or
// forgotten: a cache of discovery is current while it is the same.
func CustomGeneration() uint64 {
	customKinds.RLock()
	defer customKinds.RUnlock()
	return customKinds.generation
}

// CustomKind returns the registered kind of a custom resource.
func CustomKind(gr schema.GroupResource) (*Kind, bool) {
	customKinds.RLock()
	defer customKinds.RUnlock()
	k, ok := customKinds.byGR[gr]
	return k, ok
}

// CustomKinds returns the registered custom kinds, sorted by resource.
func CustomKinds() []*Kind {
	customKinds.RLock()
	out := make([]*Kind, 0, len(customKinds.byGR))
	for _, k := range customKinds.byGR {
		out = append(out, k)
	}
	customKinds.RUnlock()
	slices.SortFunc(out, func(a, b *Kind) int { return strings.Compare(a.GroupResource().String(), b.GroupResource().String()) })
	return out
}

// AllKinds returns the built-in kinds and then the custom ones: what a
// controller that handles any object (garbage collection, a namespace's
// deletion, a source's inventory) walks.
func AllKinds() []*Kind {
	custom := CustomKinds()
	if len(custom) == 0 {
		return kinds
	}
	return append(slices.Clip(kinds), custom...)
}

// Current returns the kind registered now for k's resource: k itself for
// a built-in kind, the newest kind of a custom resource (nil once its CRD
// is gone).
func (k *Kind) Current() *Kind {
	if !k.Custom {
		return k
	}
	cur, _ := CustomKind(k.GroupResource())
	return cur
}

// Replaced is closed once a custom kind is no longer the registered kind
// of its resource (its CRD changed or went); nil, never closed, for a
// built-in kind.
func (k *Kind) Replaced() <-chan struct{} { return k.replaced }

func lookupCustom(name string) (*Kind, bool) {
	customKinds.RLock()
	defer customKinds.RUnlock()
	if k, ok := customKinds.byName[name]; ok {
		return k, true
	}
	for _, k := range customKinds.byGR {
		if strings.EqualFold(k.GVK.Kind, name) {
			return k, true
		}
	}
	return nil, false
}

func customKindFor(gvk schema.GroupVersionKind) (*Kind, bool) {
	customKinds.RLock()
	defer customKinds.RUnlock()
	k, ok := customKinds.byGVK[gvk]
	return k, ok
}

func customKindNamed(name string) (*Kind, bool) {
	customKinds.RLock()
	defer customKinds.RUnlock()
	for _, k := range customKinds.byGR {
		if k.GVK.Kind == name {
			return k, true
		}
	}
	return nil, false
}

// ToInternalCRD converts a CRD to apiextensions' internal type, which its
// validation and schema packages take.
func ToInternalCRD(crd *CustomResourceDefinition) (*apiextensionsinternal.CustomResourceDefinition, error) {
	out := &apiextensionsinternal.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// validateCRD is Kubernetes' validation of a CRD (a non-structural schema
// is refused with its message), and of a change to one.
func validateCRD(crd, old *CustomResourceDefinition) field.ErrorList {
	in, err := ToInternalCRD(crd)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), crd.Name, err.Error())}
	}
	if old == nil {
		return apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), in)
	}
	oldIn, err := ToInternalCRD(old)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), old.Name, err.Error())}
	}
	return apiextensionsvalidation.ValidateCustomResourceDefinitionUpdate(context.Background(), in, oldIn)
}

// defaultCRD applies Kubernetes' defaults to a CRD.
func defaultCRD(crd *CustomResourceDefinition) {
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	// Kubernetes records the storage version among the stored ones when
	// the CRD is written.
	if v := StorageVersion(crd); v != "" && !slices.Contains(crd.Status.StoredVersions, v) {
		crd.Status.StoredVersions = append(crd.Status.StoredVersions, v)
	}
}

// validateCRDSpec is Kubernetes' validation of a new CRD, less the
// metadata checks Validate makes for every kind.
func validateCRDSpec(crd *CustomResourceDefinition) field.ErrorList {
	var errs field.ErrorList
	if want := CRDName(crd.Spec.Group, crd.Spec.Names.Plural); crd.Name != want && crd.Name != "" {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), crd.Name, fmt.Sprintf("must be spec.names.plural+\".\"+spec.group (%s)", want)))
	}
	for _, e := range validateCRD(crd, nil) {
		if !strings.HasPrefix(e.Field, "metadata") {
			errs = append(errs, e)
		}
	}
	if c := crd.Spec.Conversion; c != nil && c.Strategy != apiextensionsv1.NoneConverter {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "conversion", "strategy"), c.Strategy,
			[]string{string(apiextensionsv1.NoneConverter)}))
	}
	return errs
}

// validateCRDUpdate is Kubernetes' validation of a change to a CRD, less
// what validateCRDSpec already said of the new one.
func validateCRDUpdate(old, crd *CustomResourceDefinition) field.ErrorList {
	seen := map[string]bool{}
	for _, e := range validateCRD(crd, nil) {
		seen[e.Error()] = true
	}
	var errs field.ErrorList
	for _, e := range validateCRD(crd, old) {
		if !seen[e.Error()] && !strings.HasPrefix(e.Field, "metadata") {
			errs = append(errs, e)
		}
	}
	return errs
}

// decodeCustom decodes a custom resource as a generic object.
func decodeCustom(data []byte, dropStatus bool) (*unstructured.Unstructured, error) {
	var m map[string]any
	// As Kubernetes decodes a custom resource: whole numbers are int64.
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("Invalid value: %s", oneLine(err.Error()))
	}
	if m == nil {
		return nil, errors.New("Invalid value: null: expected an object")
	}
	if dropStatus {
		delete(m, "status")
	}
	if md, ok := m["metadata"]; ok && md != nil {
		if _, ok := md.(map[string]any); !ok {
			return nil, errors.New("metadata: Invalid type: expected object")
		}
	}
	u := &unstructured.Unstructured{Object: m}
	// The metadata must decode as ObjectMeta, or its getters would read
	// nothing of a field of the wrong type.
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("metadata: %s", oneLine(err.Error()))
	}
	return u, nil
}
