package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/apply"
	"github.com/berth-dev/berth/reconcile/volume"
	"github.com/berth-dev/berth/reconcile/workload"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/store"
)

var (
	serviceKind      = api.KindOf(&api.Service{})
	claimKind        = api.KindOf(&api.PersistentVolumeClaim{})
	volumeKind       = api.KindOf(&api.PersistentVolume{})
	storageClassKind = api.KindOf(&api.StorageClass{})
	budgetKind       = api.KindOf(&api.PodDisruptionBudget{})
)

// unplaced groups the pods left pending by workload, each with its
// distinct scheduler messages, most frequent first.
func (sim *simulation) unplaced() []Unplaced {
	byWorkload := map[string]map[string]int{}
	pods := map[string]int{}
	for _, p := range sim.pending {
		w := sim.workloadOf[workloadKey(p.pod)]
		if w == "" {
			w = "Pod/" + p.pod.Namespace + "/" + p.pod.Name
		}
		if byWorkload[w] == nil {
			byWorkload[w] = map[string]int{}
		}
		byWorkload[w][p.reason]++
		pods[w]++
	}
	out := make([]Unplaced, 0, len(byWorkload))
	for w, reasons := range byWorkload {
		u := Unplaced{Workload: w, Pods: pods[w]}
		for r := range reasons {
			u.Reasons = append(u.Reasons, r)
		}
		slices.SortFunc(u.Reasons, func(a, b string) int {
			return cmp.Or(cmp.Compare(reasons[b], reasons[a]), cmp.Compare(a, b))
		})
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Unplaced) int { return cmp.Compare(a.Workload, b.Workload) })
	return out
}

// workloadKey is the key sim.workload files a pod's controller under.
func workloadKey(p *api.Pod) string {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return ""
	}
	return ref.Kind + "/" + p.Namespace + "/" + ref.Name
}

// pendingClaims lists the claims written since the fork (the revision's,
// and those a StatefulSet made) that nothing would bind: no volume that
// matches is available and their class provisions none.
func pendingClaims(snap *store.Snapshot, base uint64) ([]Finding, error) {
	var claims []*api.PersistentVolumeClaim
	err := snap.Each(claimKind, store.Filter{Predicate: changedSince(base)}, func(obj api.Object) bool {
		c := obj.(*api.PersistentVolumeClaim)
		if c.Spec.VolumeName == "" && c.Status.Phase != api.ClaimBound {
			claims = append(claims, c)
		}
		return true
	})
	if err != nil || len(claims) == 0 {
		return nil, err
	}
	index := volume.NewIndex()
	if err := snap.Each(volumeKind, store.Filter{}, func(obj api.Object) bool {
		if pv := obj.(*api.PersistentVolume); volume.Available(pv) {
			index.Set(pv)
		}
		return true
	}); err != nil {
		return nil, err
	}
	var out []Finding
	for _, c := range claims {
		req, err := volume.NewRequest(c, nil)
		if err != nil {
			out = append(out, Finding{Object: ref(claimKind, c.Namespace, c.Name), Message: err.Error()})
			continue
		}
		if req.Class != "" {
			obj, err := snap.Get(storageClassKind, "", req.Class)
			if err == nil && obj.(*api.StorageClass).Provisioner == api.LocalPathProvisioner {
				continue
			}
		}
		if pv := index.Match(req); pv != nil {
			index.Remove(pv.Name)
			continue
		}
		msg := "no available PersistentVolume matches it"
		if req.Class != "" {
			msg += fmt.Sprintf(", and StorageClass %q provisions none", req.Class)
		}
		out = append(out, Finding{Object: ref(claimKind, c.Namespace, c.Name), Message: msg})
	}
	return out, nil
}

// emptyServices lists the revision's Services whose selector would match
// no running pod.
func emptyServices(snap *store.Snapshot, steps []apply.Step) ([]Finding, error) {
	var out []Finding
	for _, s := range steps {
		if s.Key.Kind != serviceKind || (s.Action != apply.ActionCreate && s.Action != apply.ActionUpdate && s.Action != apply.ActionUnchanged) {
			continue
		}
		svc, err := snap.Get(serviceKind, s.Key.Namespace, s.Key.Name)
		if err != nil {
			continue
		}
		sel := svc.(*api.Service).Spec.Selector
		if len(sel) == 0 {
			continue
		}
		found := false
		err = snap.Each(podKind, store.Filter{Namespace: s.Key.Namespace, Labels: labels.SelectorFromSet(sel)}, func(obj api.Object) bool {
			p := obj.(*api.Pod)
			found = p.DeletionTimestamp == nil && !p.Finished()
			return !found
		})
		if err != nil {
			return nil, err
		}
		if !found {
			out = append(out, Finding{Object: s.Key.String(), Message: fmt.Sprintf("selector %s matches no pod", labels.SelectorFromSet(sel))})
		}
	}
	return out, nil
}

// rollouts says, for each Deployment and StatefulSet whose template the
// revision changes, whether the simulation finished replacing its pods,
// and which disruption budgets its steps would go below.
func rollouts(snap *store.Snapshot, steps []apply.Step, sim *simulation) ([]Rollout, error) {
	var out []Rollout
	for _, s := range steps {
		if s.Action != apply.ActionUpdate || (s.Key.Kind != deploymentKind && s.Key.Kind != statefulSetKind) ||
			!slices.ContainsFunc(s.Fields, func(f string) bool { return strings.HasPrefix(f, "spec.template") }) {
			continue
		}
		obj, err := snap.Get(s.Key.Kind, s.Key.Namespace, s.Key.Name)
		if err != nil {
			continue
		}
		var (
			ro          = Rollout{Workload: s.Key.String()}
			unavailable int32
			template    map[string]string
			done        bool
		)
		switch o := obj.(type) {
		case *api.Deployment:
			ro.Replicas = replicas(o.Spec.Replicas)
			ro.Updated = o.Status.UpdatedReplicas
			template = o.Spec.Template.Labels
			ro.Strategy = string(o.Spec.Strategy.Type)
			if o.Spec.Strategy.Type != api.RecreateDeploymentStrategyType && o.Spec.Strategy.RollingUpdate != nil {
				ru := o.Spec.Strategy.RollingUpdate
				surge, unav, err := workload.ResolveFenceposts(ru.MaxSurge, ru.MaxUnavailable, ro.Replicas)
				if err == nil {
					unavailable = unav
					ro.Strategy = fmt.Sprintf("RollingUpdate maxSurge=%d maxUnavailable=%d", surge, unav)
				}
			} else {
				unavailable = ro.Replicas
			}
			done = o.Status.UpdatedReplicas >= ro.Replicas && o.Status.Replicas == ro.Replicas
		case *api.StatefulSet:
			ro.Replicas = replicas(o.Spec.Replicas)
			ro.Updated = o.Status.UpdatedReplicas
			template = o.Spec.Template.Labels
			ro.Strategy = string(o.Spec.UpdateStrategy.Type)
			unavailable = 1
			if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
				if _, unav, err := workload.ResolveFenceposts(nil, ru.MaxUnavailable, ro.Replicas); err == nil && unav > 0 {
					unavailable = unav
				}
			}
			ro.Strategy += fmt.Sprintf(" maxUnavailable=%d", unavailable)
			done = o.Spec.UpdateStrategy.Type == api.OnDeleteStatefulSetStrategyType ||
				(o.Status.UpdatedReplicas >= ro.Replicas && o.Status.ReadyReplicas >= ro.Replicas)
		}
		ro.Fits = done
		if done {
			ro.Message = fmt.Sprintf("completes: %d/%d pods updated", ro.Updated, ro.Replicas)
		} else {
			ro.Message = fmt.Sprintf("stalls at %d/%d pods updated", ro.Updated, ro.Replicas)
			for _, u := range sim.unplaced() {
				if u.Workload == ro.Workload {
					ro.Message += fmt.Sprintf(": %d new pod(s) have no room: %s", u.Pods, strings.Join(u.Reasons, "; "))
				}
			}
		}
		warnings, err := budgets(snap, s.Key.Namespace, template, unavailable)
		if err != nil {
			return nil, err
		}
		ro.Warnings = warnings
		out = append(out, ro)
	}
	return out, nil
}

// budgets names the PodDisruptionBudgets over a workload's pods that
// allow fewer disruptions than the rollout makes at once.
func budgets(snap *store.Snapshot, namespace string, podLabels map[string]string, unavailable int32) ([]string, error) {
	if unavailable <= 0 {
		return nil, nil
	}
	var out []string
	err := snap.Each(budgetKind, store.Filter{Namespace: namespace}, func(obj api.Object) bool {
		pdb := obj.(*api.PodDisruptionBudget)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(podLabels)) {
			return true
		}
		if pdb.Status.DisruptionsAllowed < unavailable {
			out = append(out, fmt.Sprintf("PodDisruptionBudget/%s/%s allows %d disruption(s); the rollout takes down up to %d pod(s) at once",
				namespace, pdb.Name, pdb.Status.DisruptionsAllowed, unavailable))
		}
		return true
	})
	return out, err
}

func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

// capacity is what each node, and the cluster, has left.
func capacity(nodes []*sched.NodeInfo) ([]Capacity, Capacity) {
	out := make([]Capacity, 0, len(nodes))
	var total Capacity
	for _, n := range nodes {
		c := Capacity{
			Node:                n.Name(),
			MilliCPU:            n.Allocatable.MilliCPU - n.Requested.MilliCPU,
			Memory:              n.Allocatable.Memory - n.Requested.Memory,
			Pods:                n.Allocatable.Pods - n.Requested.Pods,
			AllocatableMilliCPU: n.Allocatable.MilliCPU,
			AllocatableMemory:   n.Allocatable.Memory,
			AllocatablePods:     n.Allocatable.Pods,
		}
		out = append(out, c)
		total.MilliCPU += c.MilliCPU
		total.Memory += c.Memory
		total.Pods += c.Pods
		total.AllocatableMilliCPU += c.AllocatableMilliCPU
		total.AllocatableMemory += c.AllocatableMemory
		total.AllocatablePods += c.AllocatablePods
	}
	slices.SortFunc(out, func(a, b Capacity) int { return cmp.Compare(a.Node, b.Node) })
	return out, total
}

func ref(k *api.Kind, namespace, name string) string {
	return apply.Key{Kind: k, Namespace: namespace, Name: name}.String()
}
