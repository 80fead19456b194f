package api

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// +kubebuilder:object:root=true

// LimitRange sets the default requests and limits of the containers of a
// namespace, and the least and most a container, a pod or a claim may
// ask for; the store applies it when a pod or a claim is written.
type LimitRange struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the limits, one item per type of object.
	Spec LimitRangeSpec `json:"spec,omitempty"`
}

// LimitRangeSpec holds the limits of a LimitRange.
type LimitRangeSpec struct {
	// Limits are the items, at most one per type.
	// +listType=atomic
	Limits []LimitRangeItem `json:"limits"`
}

// LimitType is what a LimitRangeItem bounds.
type LimitType string

// The types a LimitRangeItem may bound.
const (
	LimitTypePod                   LimitType = "Pod"
	LimitTypeContainer             LimitType = "Container"
	LimitTypePersistentVolumeClaim LimitType = "PersistentVolumeClaim"
)

// LimitRangeItem bounds one type of object.
type LimitRangeItem struct {
	// Type is Pod, Container or PersistentVolumeClaim.
	Type LimitType `json:"type"`
	// Max is the most the object may ask for, by resource: the limit of a
	// container or pod, the storage request of a claim.
	Max ResourceList `json:"max,omitempty"`
	// Min is the least the object may ask for, by resource: the request.
	Min ResourceList `json:"min,omitempty"`
	// Default is the limit a container gets where it sets none; it
	// defaults to Max.
	Default ResourceList `json:"default,omitempty"`
	// DefaultRequest is the request a container gets where it sets none;
	// it defaults to Default, then to Min.
	DefaultRequest ResourceList `json:"defaultRequest,omitempty"`
	// MaxLimitRequestRatio is the most a limit may be over its request,
	// as a ratio, by resource.
	MaxLimitRequestRatio ResourceList `json:"maxLimitRequestRatio,omitempty"`
}

// defaultLimitRange fills a container item as Kubernetes does: the
// default limit from max, the default request from the default limit,
// else from min.
func defaultLimitRange(lr *LimitRange) {
	for i := range lr.Spec.Limits {
		it := &lr.Spec.Limits[i]
		if it.Type != LimitTypeContainer {
			continue
		}
		fill := func(into *ResourceList, from ResourceList) {
			for name, q := range from {
				if _, ok := (*into)[name]; ok {
					continue
				}
				if *into == nil {
					*into = ResourceList{}
				}
				(*into)[name] = q.DeepCopy()
			}
		}
		fill(&it.Default, it.Max)
		fill(&it.DefaultRequest, it.Default)
		fill(&it.DefaultRequest, it.Min)
	}
}

var limitTypes = []LimitType{LimitTypePod, LimitTypeContainer, LimitTypePersistentVolumeClaim}

// validateLimitRange follows Kubernetes' ValidateLimitRange, in its words.
func validateLimitRange(lr *LimitRange) field.ErrorList {
	var errs field.ErrorList
	lp := field.NewPath("spec", "limits")
	seen := map[LimitType]bool{}
	for i := range lr.Spec.Limits {
		it := &lr.Spec.Limits[i]
		ip := lp.Index(i)
		switch {
		case it.Type == "":
			errs = append(errs, field.Required(ip.Child("type"), ""))
		case !containsLimitType(it.Type):
			errs = append(errs, field.NotSupported(ip.Child("type"), it.Type, limitTypes))
		case seen[it.Type]:
			errs = append(errs, field.Duplicate(ip.Child("type"), it.Type))
		}
		seen[it.Type] = true
		allowed := containerResources
		if it.Type == LimitTypePersistentVolumeClaim {
			allowed = []ResourceName{ResourceStorage}
		}
		errs = append(errs, validateResourceList(it.Max, allowed, ip.Child("max"))...)
		errs = append(errs, validateResourceList(it.Min, allowed, ip.Child("min"))...)
		if it.Type == LimitTypePod {
			if len(it.Default) > 0 {
				errs = append(errs, field.Forbidden(ip.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(it.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(ip.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		} else {
			errs = append(errs, validateResourceList(it.Default, allowed, ip.Child("default"))...)
			errs = append(errs, validateResourceList(it.DefaultRequest, allowed, ip.Child("defaultRequest"))...)
		}
		if it.Type == LimitTypePersistentVolumeClaim {
			_, hasMin := it.Min[ResourceStorage]
			_, hasMax := it.Max[ResourceStorage]
			if !hasMin && !hasMax {
				errs = append(errs, field.Required(ip.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		errs = append(errs, validateResourceList(it.MaxLimitRequestRatio, allowed, ip.Child("maxLimitRequestRatio"))...)
		errs = append(errs, validateLimitRangeAmounts(it, ip)...)
	}
	return errs
}

// validateLimitRangeAmounts checks that an item's amounts agree: min
// under max, the defaults between them, a ratio of at least 1 and no more
// than max over min.
func validateLimitRangeAmounts(it *LimitRangeItem, ip *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := ResourceList{}
	for _, l := range []ResourceList{it.Max, it.Min, it.Default, it.DefaultRequest, it.MaxLimitRequestRatio} {
		for name := range l {
			names[name] = resource.Quantity{}
		}
	}
	if it.Type == LimitTypePod {
		// Kubernetes does not look at a Pod item's defaults, refused above.
		for name := range names {
			if !has(it.Max, name) && !has(it.Min, name) && !has(it.MaxLimitRequestRatio, name) {
				delete(names, name)
			}
		}
	}
	for _, name := range sortedResourceNames(names) {
		key := string(name)
		minQ, hasMin := it.Min[name]
		maxQ, hasMax := it.Max[name]
		def, hasDef := it.Default[name]
		defReq, hasDefReq := it.DefaultRequest[name]
		if it.Type == LimitTypePod {
			hasDef, hasDefReq = false, false
		}
		ratio, hasRatio := it.MaxLimitRequestRatio[name]
		if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
			errs = append(errs, field.Invalid(ip.Child("min").Key(key), minQ.String(), fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
		}
		if hasDefReq && hasMin && minQ.Cmp(defReq) > 0 {
			errs = append(errs, field.Invalid(ip.Child("defaultRequest").Key(key), defReq.String(), fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), defReq.String())))
		}
		if hasDefReq && hasMax && defReq.Cmp(maxQ) > 0 {
			errs = append(errs, field.Invalid(ip.Child("defaultRequest").Key(key), defReq.String(), fmt.Sprintf("default request value %s is greater than max value %s", defReq.String(), maxQ.String())))
		}
		if hasDefReq && hasDef && defReq.Cmp(def) > 0 {
			errs = append(errs, field.Invalid(ip.Child("defaultRequest").Key(key), defReq.String(), fmt.Sprintf("default request value %s is greater than default limit value %s", defReq.String(), def.String())))
		}
		if hasDef && hasMin && minQ.Cmp(def) > 0 {
			errs = append(errs, field.Invalid(ip.Child("default").Key(key), minQ.String(), fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), def.String())))
		}
		if hasDef && hasMax && def.Cmp(maxQ) > 0 {
			errs = append(errs, field.Invalid(ip.Child("default").Key(key), maxQ.String(), fmt.Sprintf("default value %s is greater than max value %s", def.String(), maxQ.String())))
		}
		if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
			errs = append(errs, field.Invalid(ip.Child("maxLimitRequestRatio").Key(key), ratio.String(), fmt.Sprintf("ratio %s is less than 1", ratio.String())))
		}
		if hasRatio && hasMin && hasMax {
			r, lo, hi := float64(ratio.Value()), minQ.Value(), maxQ.Value()
			if ratio.Value() < resource.MaxMilliValue && lo < resource.MaxMilliValue && hi < resource.MaxMilliValue {
				r, lo, hi = float64(ratio.MilliValue())/1000, minQ.MilliValue(), maxQ.MilliValue()
			}
			if lo > 0 {
				if most := float64(hi) / float64(lo); r > most {
					errs = append(errs, field.Invalid(ip.Child("maxLimitRequestRatio").Key(key), ratio.String(), fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), most)))
				}
			}
		}
	}
	return errs
}

func has(l ResourceList, name ResourceName) bool {
	_, ok := l[name]
	return ok
}

func containsLimitType(t LimitType) bool { return slices.Contains(limitTypes, t) }
