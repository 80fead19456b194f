package api

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// +kubebuilder:object:root=true

// PriorityClass is a scheduling.k8s.io/v1 PriorityClass: a name for a
// pod priority. A pod's priorityClassName is resolved at admission into
// spec.priority and spec.preemptionPolicy; the scheduler tries pods of
// higher priority first and may preempt pods of lower priority to place
// one.
type PriorityClass struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Value is the priority the pods of this class get: the higher, the
	// sooner they are scheduled and the more pods they may preempt. At
	// most 1,000,000,000 for a class a user makes; the two system classes
	// are above. It cannot change.
	Value int32 `json:"value"`
	// GlobalDefault makes this class's value the priority of pods that
	// name no class. At most one class may be the global default.
	GlobalDefault bool `json:"globalDefault,omitempty"`
	// Description says when to use the class.
	Description string `json:"description,omitempty"`
	// PreemptionPolicy is PreemptLowerPriority (the default) or Never: a
	// pod of a Never class waits for room instead of preempting. It cannot
	// change.
	PreemptionPolicy *PreemptionPolicy `json:"preemptionPolicy,omitempty"`
}

// Priority bounds and the system classes, Kubernetes' values.
const (
	// HighestUserDefinablePriority is the largest value a PriorityClass
	// other than the system ones may have.
	HighestUserDefinablePriority int32 = 1000000000
	// SystemCriticalPriority is the value of system-cluster-critical.
	SystemCriticalPriority int32 = 2 * HighestUserDefinablePriority
	// SystemPriorityClassPrefix starts the names only system classes have.
	SystemPriorityClassPrefix = "system-"
	// SystemClusterCritical and SystemNodeCritical are the classes every
	// cluster has.
	SystemClusterCritical = SystemPriorityClassPrefix + "cluster-critical"
	SystemNodeCritical    = SystemPriorityClassPrefix + "node-critical"
)

// SystemPriorityClasses returns the two classes every cluster has, as
// Kubernetes' API server makes them.
func SystemPriorityClasses() []*PriorityClass {
	policy := PreemptLowerPriority
	return []*PriorityClass{
		{
			ObjectMeta:       metav1.ObjectMeta{Name: SystemNodeCritical},
			Value:            SystemCriticalPriority + 1000,
			Description:      "Used for system critical pods that must not be moved from their current node.",
			PreemptionPolicy: &policy,
		},
		{
			ObjectMeta:       metav1.ObjectMeta{Name: SystemClusterCritical},
			Value:            SystemCriticalPriority,
			Description:      "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
			PreemptionPolicy: &policy,
		},
	}
}

// isKnownSystemPriorityClass is Kubernetes' check of a class whose name
// has the system prefix.
func isKnownSystemPriorityClass(pc *PriorityClass) error {
	for _, sys := range SystemPriorityClasses() {
		if sys.Name != pc.Name {
			continue
		}
		if sys.Value != pc.Value {
			return fmt.Errorf("value of %v PriorityClass must be %v", sys.Name, sys.Value)
		}
		if sys.GlobalDefault != pc.GlobalDefault {
			return fmt.Errorf("globalDefault of %v PriorityClass must be %v", sys.Name, sys.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%v is not a known system priority class", pc.Name)
}

func defaultPriorityClass(pc *PriorityClass) {
	if pc.PreemptionPolicy == nil {
		p := PreemptLowerPriority
		pc.PreemptionPolicy = &p
	}
}

// validatePriorityClass is Kubernetes' ValidatePriorityClass.
func validatePriorityClass(pc *PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, SystemPriorityClassPrefix) {
		if err := isKnownSystemPriorityClass(pc); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+SystemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > HighestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"),
			fmt.Sprintf("maximum allowed value of a user defined priority is %v", HighestUserDefinablePriority)))
	}
	if pp := pc.PreemptionPolicy; pp != nil {
		errs = append(errs, validateOneOf(*pp, preemptionPolicies, field.NewPath("preemptionPolicy"))...)
	}
	return errs
}

// validatePriorityClassUpdate: the value and the preemption policy are
// fixed once the class exists.
func validatePriorityClassUpdate(old, pc *PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if pc.Value != old.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	var was, is PreemptionPolicy
	if old.PreemptionPolicy != nil {
		was = *old.PreemptionPolicy
	}
	if pc.PreemptionPolicy != nil {
		is = *pc.PreemptionPolicy
	}
	return append(errs, immutable(was, is, field.NewPath("preemptionPolicy"))...)
}
