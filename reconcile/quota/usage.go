package quota

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/api"
)

var (
	quotaKind     = api.MustLookupResource("resourcequotas")
	podKind       = api.MustLookupResource("pods")
	claimKind     = api.MustLookupResource("persistentvolumeclaims")
	serviceKind   = api.MustLookupResource("services")
	configMapKind = api.MustLookupResource("configmaps")
	secretKind    = api.MustLookupResource("secrets")
)

// countedKinds are the kinds whose objects use quota, each with the
// resources its objects may use, so that counting one resource lists only
// the kinds that can hold it.
var countedKinds = []struct {
	kind      *api.Kind
	resources []api.ResourceName
}{
	{podKind, []api.ResourceName{
		api.ResourcePods, api.ResourceCPU, api.ResourceMemory,
		api.ResourceRequestsCPU, api.ResourceRequestsMemory, api.ResourceLimitsCPU, api.ResourceLimitsMemory,
	}},
	{claimKind, []api.ResourceName{api.ResourcePersistentVolumeClaims, api.ResourceRequestsStorage}},
	{serviceKind, []api.ResourceName{api.ResourceServices}},
	{configMapKind, []api.ResourceName{api.ResourceConfigMaps}},
	{secretKind, []api.ResourceName{api.ResourceSecrets}},
}

// Counted reports whether objects of kind k use quota, so that writes of
// every other kind skip the quota at once.
func Counted(k *api.Kind) bool {
	for _, c := range countedKinds {
		if c.kind == k {
			return true
		}
	}
	return false
}

// Usage is what an object takes from its namespace's quotas, as
// Kubernetes' quota evaluators count it: a pod that is neither finished
// (Succeeded, Failed) nor being deleted takes one of `pods` and its
// effective requests and limits of cpu and memory (requests also under the
// bare `cpu` and `memory` names); a claim takes one of
// `persistentvolumeclaims` and its storage request as `requests.storage`;
// a service, config map or secret one of its count. Resources an object
// does not use are absent; an object of another kind, or nil, uses none.
func Usage(obj api.Object) api.ResourceList {
	switch o := obj.(type) {
	case *api.Pod:
		return podUsage(o)
	case *api.PersistentVolumeClaim:
		l := api.ResourceList{api.ResourcePersistentVolumeClaims: *resource.NewQuantity(1, resource.DecimalSI)}
		if q, ok := o.Spec.Resources.Requests[api.ResourceStorage]; ok && !q.IsZero() {
			l[api.ResourceRequestsStorage] = q.DeepCopy()
		}
		return l
	case *api.Service:
		return count(api.ResourceServices)
	case *api.ConfigMap:
		return count(api.ResourceConfigMaps)
	case *api.Secret:
		return count(api.ResourceSecrets)
	}
	return nil
}

func count(name api.ResourceName) api.ResourceList {
	return api.ResourceList{name: *resource.NewQuantity(1, resource.DecimalSI)}
}

func podUsage(p *api.Pod) api.ResourceList {
	if !podCounted(p) {
		return nil
	}
	l := count(api.ResourcePods)
	requests, limits := api.PodRequests(&p.Spec), api.PodLimits(&p.Spec)
	for _, r := range []struct {
		from  api.ResourceList
		name  api.ResourceName
		names []api.ResourceName
	}{
		{requests, api.ResourceCPU, []api.ResourceName{api.ResourceRequestsCPU, api.ResourceCPU}},
		{requests, api.ResourceMemory, []api.ResourceName{api.ResourceRequestsMemory, api.ResourceMemory}},
		{limits, api.ResourceCPU, []api.ResourceName{api.ResourceLimitsCPU}},
		{limits, api.ResourceMemory, []api.ResourceName{api.ResourceLimitsMemory}},
	} {
		q, ok := r.from[r.name]
		if !ok || q.IsZero() {
			continue
		}
		for _, n := range r.names {
			l[n] = q.DeepCopy()
		}
	}
	return l
}

// podCounted: a pod that is neither finished nor being deleted uses quota.
func podCounted(p *api.Pod) bool {
	return p != nil && p.DeletionTimestamp == nil && p.Status.Phase != api.PodSucceeded && p.Status.Phase != api.PodFailed
}

// SameUsage reports, without counting either, that two versions of an
// object use the same quota. It knows pods, whose common changes (a
// binding, a status report) leave alone all that Usage reads: whether
// the pod counts, and its containers' requests and limits. false means
// only that the caller must count.
func SameUsage(obj, old api.Object) bool {
	p, ok := obj.(*api.Pod)
	o, ok2 := old.(*api.Pod)
	if !ok || !ok2 || p == nil || o == nil {
		return false
	}
	if podCounted(p) != podCounted(o) {
		return false
	}
	return !podCounted(p) || sameResources(p.Spec.Containers, o.Spec.Containers) &&
		sameResources(p.Spec.InitContainers, o.Spec.InitContainers)
}

func sameResources(a, b []api.Container) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameAmounts(a[i].Resources.Requests, b[i].Resources.Requests) ||
			!sameAmounts(a[i].Resources.Limits, b[i].Resources.Limits) {
			return false
		}
	}
	return true
}

func sameAmounts(a, b api.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		r, ok := b[name]
		if !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}

// Add returns a + b, resource by resource.
func Add(a, b api.ResourceList) api.ResourceList {
	out := make(api.ResourceList, len(a)+len(b))
	for name, q := range a {
		out[name] = q.DeepCopy()
	}
	api.AddResources(out, b)
	return out
}

// Subtract returns a - b, resource by resource, leaving out the resources
// where they are equal: the change a write makes to usage, when a is the
// object's new usage and b its old.
func Subtract(a, b api.ResourceList) api.ResourceList {
	out := api.ResourceList{}
	for name, q := range a {
		out[name] = q.DeepCopy()
	}
	for name, q := range b {
		cur := out[name].DeepCopy()
		cur.Sub(q)
		out[name] = cur
	}
	for name, q := range out {
		if q.IsZero() {
			delete(out, name)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Exceeded returns, sorted, the resources a change would take over a
// quota's hard limits: those it increases that the quota limits and for
// which used plus the change is more than hard. A change that frees a
// resource never exceeds it, even when usage is over a limit lowered
// since.
func Exceeded(hard, used, delta api.ResourceList) []api.ResourceName {
	var out []api.ResourceName
	for name, d := range delta {
		h, limited := hard[name]
		if !limited || d.Sign() <= 0 {
			continue
		}
		n := used[name].DeepCopy()
		n.Add(d)
		if n.Cmp(h) > 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Message is Kubernetes' wording of a refusal, naming only the exceeded
// resources: `exceeded quota: NAME, requested: pods=1, used: pods=2,
// limited: pods=2`, so that users and scripts read the same as with
// kubectl.
func Message(quota string, hard, used, delta api.ResourceList, exceeded []api.ResourceName) string {
	return fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
		quota, pretty(delta, exceeded), pretty(used, exceeded), pretty(hard, exceeded))
}

func pretty(l api.ResourceList, names []api.ResourceName) string {
	parts := make([]string, len(names))
	for i, name := range names {
		q := l[name]
		parts[i] = fmt.Sprintf("%s=%s", name, q.String())
	}
	return strings.Join(parts, ",")
}

// computeNames are the quota resources that, when a quota limits them,
// every container of a new pod must name, as Kubernetes requires.
var computeNames = []api.ResourceName{
	api.ResourceCPU, api.ResourceLimitsCPU, api.ResourceLimitsMemory,
	api.ResourceMemory, api.ResourceRequestsCPU, api.ResourceRequestsMemory,
}

// Unspecified is Kubernetes' check that a pod in a namespace whose quota
// limits cpu or memory states, in every container, each limited amount,
// since an unstated one could not be charged: it returns "" when the pod
// does, else the message `must specify limits.cpu for: a,b; requests.memory
// for: a`, resources and containers sorted.
func Unspecified(p *api.Pod, hard api.ResourceList) string {
	var missing []string
	for _, name := range computeNames {
		if _, limited := hard[name]; !limited {
			continue
		}
		var containers []string
		for _, cs := range [][]api.Container{p.Spec.Containers, p.Spec.InitContainers} {
			for i := range cs {
				if !states(&cs[i], name) {
					containers = append(containers, cs[i].Name)
				}
			}
		}
		if len(containers) > 0 {
			slices.Sort(containers)
			missing = append(missing, fmt.Sprintf("%s for: %s", name, strings.Join(slices.Compact(containers), ",")))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "must specify " + strings.Join(missing, "; ")
}

// states reports whether a container states the amount a quota resource
// counts: a request for cpu, memory and requests.*, a limit for limits.*.
func states(c *api.Container, name api.ResourceName) bool {
	from, res := c.Resources.Requests, name
	switch name {
	case api.ResourceRequestsCPU:
		res = api.ResourceCPU
	case api.ResourceRequestsMemory:
		res = api.ResourceMemory
	case api.ResourceLimitsCPU:
		from, res = c.Resources.Limits, api.ResourceCPU
	case api.ResourceLimitsMemory:
		from, res = c.Resources.Limits, api.ResourceMemory
	}
	_, ok := from[res]
	return ok
}
