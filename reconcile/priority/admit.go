package priority

import (
	"context"
	"fmt"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var (
	classKind = api.KindOf(&api.PriorityClass{})
	podKind   = api.KindOf(&api.Pod{})
)

// Admit is the store hook (a store.AdmitFunc) of priorities. A pod being
// created gets spec.priority and spec.preemptionPolicy from the class it
// names, or from the global default class when it names none (and that
// class's name); a pod naming a class that does not exist, or giving a
// priority or policy other than its class's, is refused with
// store.ErrForbidden and Kubernetes' message. An update that leaves the
// priority out keeps the one the pod has. A PriorityClass may be the
// global default only while no other is.
func Admit(tx *store.Txn, k *api.Kind, obj, old api.Object) error {
	if obj == nil {
		return nil
	}
	switch k {
	case podKind:
		pod := obj.(*api.Pod)
		if old != nil {
			keep(pod, old.(*api.Pod))
			return nil
		}
		return admitPod(tx, pod)
	case classKind:
		pc := obj.(*api.PriorityClass)
		if !pc.GlobalDefault {
			return nil
		}
		if other, err := globalDefault(tx); err != nil {
			return err
		} else if other != nil && other.Name != pc.Name {
			return forbidden(classKind, "", pc.Name, fmt.Sprintf("PriorityClass %v is already marked as default. Only one default can exist", other.Name))
		}
	}
	return nil
}

// keep gives an update that left them out the priority and policy the
// pod was admitted with.
func keep(pod, old *api.Pod) {
	if pod.Spec.Priority == nil && old.Spec.Priority != nil {
		pod.Spec.Priority = old.Spec.Priority
	}
	if pod.Spec.PreemptionPolicy == nil && old.Spec.PreemptionPolicy != nil {
		pod.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
	}
}

func admitPod(tx *store.Txn, pod *api.Pod) error {
	var (
		value  int32
		policy *api.PreemptionPolicy
	)
	if name := pod.Spec.PriorityClassName; name == "" {
		pc, err := globalDefault(tx)
		if err != nil {
			return err
		}
		if pc != nil {
			pod.Spec.PriorityClassName, value, policy = pc.Name, pc.Value, pc.PreemptionPolicy
		} else {
			p := api.PreemptLowerPriority
			policy = &p
		}
	} else {
		obj, err := tx.Get(classKind, "", name)
		if store.IsNotFound(err) {
			return forbidden(podKind, pod.Namespace, pod.Name, fmt.Sprintf("no PriorityClass with name %v was found", name))
		}
		if err != nil {
			return fmt.Errorf("get PriorityClass %s: %w", name, err)
		}
		pc := obj.(*api.PriorityClass)
		value, policy = pc.Value, pc.PreemptionPolicy
	}
	if p := pod.Spec.Priority; p != nil && *p != value {
		return forbidden(podKind, pod.Namespace, pod.Name, fmt.Sprintf(
			"the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *p, value))
	}
	pod.Spec.Priority = &value
	if policy != nil {
		if p := pod.Spec.PreemptionPolicy; p != nil && *p != *policy {
			return forbidden(podKind, pod.Namespace, pod.Name, fmt.Sprintf(
				"the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *p, *policy))
		}
		p := *policy
		pod.Spec.PreemptionPolicy = &p
	}
	return nil
}

// globalDefault returns the global default class, nil if there is none;
// of several, the lowest, as Kubernetes picks.
func globalDefault(tx *store.Txn) (*api.PriorityClass, error) {
	var out *api.PriorityClass
	err := tx.Each(classKind, store.Filter{}, func(o api.Object) bool {
		pc := o.(*api.PriorityClass)
		if pc.GlobalDefault && (out == nil || pc.Value < out.Value) {
			out = pc
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("list priority classes: %w", err)
	}
	return out, nil
}

func forbidden(k *api.Kind, namespace, name, detail string) error {
	return &store.ObjectError{Err: store.ErrForbidden, Kind: k, Namespace: namespace, Name: name, Detail: detail}
}

// Bootstrap creates the system classes (system-node-critical and
// system-cluster-critical) that are missing, as Kubernetes' API server
// does at every start.
func Bootstrap(ctx context.Context, s *store.Store) error {
	for _, pc := range api.SystemPriorityClasses() {
		api.Default(pc)
		if _, err := s.Create(ctx, pc); err != nil && !store.IsAlreadyExists(err) {
			return fmt.Errorf("create priorityclass %s: %w", pc.Name, err)
		}
	}
	return nil
}
