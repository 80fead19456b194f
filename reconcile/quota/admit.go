package quota

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// reader is what usage is counted from: a write transaction or a snapshot.
type reader interface {
	Each(k *api.Kind, f store.Filter, fn func(api.Object) bool) error
}

// Admit is the store hook (a store.AdmitFunc) that enforces every
// ResourceQuota and keeps its status.used exact. A write of a counted kind
// in a namespace that holds quotas is refused with store.ErrForbidden and
// Kubernetes' message when it would take a limited resource over a
// quota's hard amount, or when it creates a pod that does not state an
// amount of cpu or memory a quota limits (see Unspecified); otherwise each
// quota that limits a resource the write changes is charged, or credited,
// in the same transaction. A ResourceQuota being written gets status.hard
// from its spec and, for each limited resource its status.used lacks (all
// of them when it is created), the usage counted from the namespace as the
// transaction sees it.
func Admit(tx *store.Txn, k *api.Kind, obj, old api.Object) error {
	if k == quotaKind {
		if obj == nil {
			return nil
		}
		q := obj.(*api.ResourceQuota)
		if old == nil {
			q.Status.Used = nil // a new quota's usage is counted, never taken on trust
		}
		return prepare(tx, q)
	}
	if !Counted(k) {
		return nil
	}
	ref := obj
	if ref == nil {
		ref = old
	}
	quotas, err := quotasIn(tx, ref.GetNamespace())
	if err != nil || len(quotas) == 0 {
		return err
	}
	if p, ok := obj.(*api.Pod); ok && old == nil {
		for _, q := range quotas {
			if msg := Unspecified(p, q.Spec.Hard); msg != "" {
				return &store.ObjectError{
					Err: store.ErrForbidden, Kind: k, Namespace: p.Namespace, Name: p.Name,
					Detail: fmt.Sprintf("failed quota: %s: %s", q.Name, msg),
				}
			}
		}
	}
	if SameUsage(obj, old) {
		return nil
	}
	delta := Subtract(Usage(obj), Usage(old))
	if len(delta) == 0 {
		return nil
	}
	var charged []*api.ResourceQuota
	for _, q := range quotas {
		names := limitedIn(q.Spec.Hard, delta)
		if len(names) == 0 {
			continue
		}
		used, err := currentUsage(tx, q, names)
		if err != nil {
			return err
		}
		if exceeded := Exceeded(q.Spec.Hard, used, delta); len(exceeded) > 0 {
			return &store.ObjectError{
				Err: store.ErrForbidden, Kind: k, Namespace: ref.GetNamespace(), Name: ref.GetName(),
				Detail: Message(q.Name, q.Spec.Hard, used, delta, exceeded),
			}
		}
		sum := Add(used, delta)
		next := q.DeepCopy()
		next.Status.Used = Add(q.Status.Used, nil)
		for _, name := range names {
			n := sum[name]
			if n.Sign() < 0 {
				// Only a usage that was already wrong can go below zero;
				// the controller's recount puts it right.
				n = resource.Quantity{}
			}
			next.Status.Used[name] = n
		}
		charged = append(charged, next)
	}
	// Charged only once every quota has passed, so a refusal writes nothing.
	for _, q := range charged {
		if _, err := tx.Update(q); err != nil {
			return fmt.Errorf("charge quota %s/%s: %w", q.Namespace, q.Name, err)
		}
	}
	return nil
}

// quotasIn lists a namespace's quotas: a prefix lookup that finds nothing
// at once in the common namespace without one.
func quotasIn(r reader, namespace string) ([]*api.ResourceQuota, error) {
	var out []*api.ResourceQuota
	err := r.Each(quotaKind, store.Filter{Namespace: namespace}, func(o api.Object) bool {
		out = append(out, o.(*api.ResourceQuota))
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("list quotas of %s: %w", namespace, err)
	}
	return out, nil
}

// limitedIn returns the resources of a change that hard limits.
func limitedIn(hard, delta api.ResourceList) []api.ResourceName {
	var out []api.ResourceName
	for name := range delta {
		if _, ok := hard[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// currentUsage is a quota's usage of names before the write: its
// status.used, with what it lacks counted from the namespace.
func currentUsage(r reader, q *api.ResourceQuota, names []api.ResourceName) (api.ResourceList, error) {
	used := api.ResourceList{}
	var missing []api.ResourceName
	for _, name := range names {
		if v, ok := q.Status.Used[name]; ok {
			used[name] = v
		} else {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return used, nil
	}
	counted, err := countIn(r, q.Namespace, missing)
	if err != nil {
		return nil, err
	}
	for _, name := range missing {
		used[name] = counted[name]
	}
	return used, nil
}

// prepare sets a quota's status.hard from its spec and its status.used to
// one entry per limited resource, counting those it lacks.
func prepare(r reader, q *api.ResourceQuota) error {
	if len(q.Spec.Hard) == 0 {
		q.Status = api.ResourceQuotaStatus{}
		return nil
	}
	names := make([]api.ResourceName, 0, len(q.Spec.Hard))
	for name := range q.Spec.Hard {
		names = append(names, name)
	}
	used, err := currentUsage(r, q, names)
	if err != nil {
		return err
	}
	q.Status.Hard = Add(q.Spec.Hard, nil)
	q.Status.Used = used
	return nil
}

// countIn sums the usage of names over the counted objects of a namespace,
// listing only the kinds that can use them. Every name is in the result,
// zero when nothing uses it.
func countIn(r reader, namespace string, names []api.ResourceName) (api.ResourceList, error) {
	out := make(api.ResourceList, len(names))
	for _, name := range names {
		out[name] = resource.Quantity{Format: format(name)}
	}
	for _, c := range countedKinds {
		if !overlaps(c.resources, names) {
			continue
		}
		err := r.Each(c.kind, store.Filter{Namespace: namespace}, func(o api.Object) bool {
			for name, q := range Usage(o) {
				if _, want := out[name]; want {
					api.AddQuantity(out, name, q)
				}
			}
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("count %s of %s: %w", c.kind.Resource, namespace, err)
		}
	}
	return out, nil
}

// format is how a zero amount of a resource prints: binary for memory and
// storage, decimal for the rest, as Kubernetes prints them.
func format(name api.ResourceName) resource.Format {
	switch name {
	case api.ResourceMemory, api.ResourceRequestsMemory, api.ResourceLimitsMemory, api.ResourceRequestsStorage:
		return resource.BinarySI
	}
	return resource.DecimalSI
}

func overlaps(a, b []api.ResourceName) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}
