package node

import (
	"slices"
	"time"

	"github.com/berth-dev/berth/api"
)

// readyTaints are the taints of the Ready condition the controller adds
// and removes.
var readyTaints = []api.Taint{
	{Key: api.TaintNodeUnreachable, Effect: api.TaintEffectNoSchedule},
	{Key: api.TaintNodeUnreachable, Effect: api.TaintEffectNoExecute},
	{Key: api.TaintNodeNotReady, Effect: api.TaintEffectNoSchedule},
	{Key: api.TaintNodeNotReady, Effect: api.TaintEffectNoExecute},
}

// conditionTaints are the NoSchedule taints that stand for a cordon
// (spec.unschedulable) and for the agent's pressure conditions, as
// Kubernetes' TaintNodesByCondition sets them, so that a pod keeps off
// such a node unless it tolerates the taint. The pressure conditions'
// taints follow the condition's status True.
var conditionTaints = []struct {
	condition api.NodeConditionType // "" for spec.unschedulable
	taint     api.Taint
}{
	{"", api.Taint{Key: api.TaintNodeUnschedulable, Effect: api.TaintEffectNoSchedule}},
	{api.NodeMemoryPressure, api.Taint{Key: api.TaintNodeMemoryPressure, Effect: api.TaintEffectNoSchedule}},
	{api.NodeDiskPressure, api.Taint{Key: api.TaintNodeDiskPressure, Effect: api.TaintEffectNoSchedule}},
	{api.NodePIDPressure, api.Taint{Key: api.TaintNodePIDPressure, Effect: api.TaintEffectNoSchedule}},
}

func isReadyTaint(t api.Taint) bool { return indexTaint(readyTaints, t) >= 0 }

func isConditionTaint(t api.Taint) bool {
	for _, c := range conditionTaints {
		if c.taint.Key == t.Key && c.taint.Effect == t.Effect {
			return true
		}
	}
	return false
}

// isManaged: a taint the controller adds and removes; it touches no other
// taint of a node.
func isManaged(t api.Taint) bool { return isReadyTaint(t) || isConditionTaint(t) }

// wantReadyTaints returns the taints a node with that Ready status
// should carry: unreachable for Unknown, not-ready for False, none for
// True. noExecute false leaves the NoExecute ones out (full disruption).
func wantReadyTaints(ready api.ConditionStatus, noExecute bool) []api.Taint {
	var key string
	switch ready {
	case api.ConditionUnknown:
		key = api.TaintNodeUnreachable
	case api.ConditionFalse:
		key = api.TaintNodeNotReady
	default:
		return nil
	}
	want := []api.Taint{{Key: key, Effect: api.TaintEffectNoSchedule}}
	if noExecute {
		want = append(want, api.Taint{Key: key, Effect: api.TaintEffectNoExecute})
	}
	return want
}

// conditionTaintSet says which of conditionTaints a node with that spec
// and those conditions should carry, one bit each in their order.
func conditionTaintSet(unschedulable bool, conds []api.NodeCondition) uint {
	var set uint
	for i, c := range conditionTaints {
		if c.condition == "" {
			if unschedulable {
				set |= 1 << i
			}
		} else if cond := findCondition(conds, c.condition); cond != nil && cond.Status == api.ConditionTrue {
			set |= 1 << i
		}
	}
	return set
}

// wantConditionTaints returns the taints of set.
func wantConditionTaints(set uint) []api.Taint {
	var want []api.Taint
	for i, c := range conditionTaints {
		if set&(1<<i) != 0 {
			want = append(want, c.taint)
		}
	}
	return want
}

// reconcileTaints returns the node's taints with those that manages
// says are its own made to match want: taints it keeps keep their
// timeAdded, new NoExecute ones get now, and every other taint stays as
// it was, in its place.
func reconcileTaints(have, want []api.Taint, manages func(api.Taint) bool, now time.Time) ([]api.Taint, bool) {
	var out []api.Taint
	changed := false
	kept := make([]bool, len(want))
	for _, t := range have {
		if !manages(t) {
			out = append(out, t)
			continue
		}
		i := indexTaint(want, t)
		if i < 0 || kept[i] {
			changed = true
			continue
		}
		kept[i] = true
		out = append(out, t)
	}
	for i, w := range want {
		if kept[i] {
			continue
		}
		if w.Effect == api.TaintEffectNoExecute {
			// Kubernetes writes timeAdded for NoExecute taints alone.
			w.TimeAdded = metaTime(now)
		}
		out = append(out, w)
		changed = true
	}
	return out, changed
}

func indexTaint(ts []api.Taint, t api.Taint) int {
	for i := range ts {
		if ts[i].Key == t.Key && ts[i].Effect == t.Effect {
			return i
		}
	}
	return -1
}

// noExecuteTaints returns the NoExecute taints among ts: the managed one
// unless managed is false (full disruption), and any an operator set.
func noExecuteTaints(ts []api.Taint, managed bool) []*api.Taint {
	var out []*api.Taint
	for i := range ts {
		if ts[i].Effect == api.TaintEffectNoExecute && (managed || !isManaged(ts[i])) {
			out = append(out, &ts[i])
		}
	}
	return out
}

// stampNoExecute gives each NoExecute taint without a timeAdded (one an
// operator set: the controller stamps its own) now, as Kubernetes records
// it, so that tolerationSeconds count from when the taint was seen.
func stampNoExecute(ts []api.Taint, now time.Time) ([]api.Taint, bool) {
	var out []api.Taint
	for i := range ts {
		if ts[i].Effect != api.TaintEffectNoExecute || ts[i].TimeAdded != nil {
			continue
		}
		if out == nil {
			out = slices.Clone(ts)
		}
		out[i].TimeAdded = metaTime(now)
	}
	if out == nil {
		return ts, false
	}
	return out, true
}

// podEvictionTime is when a pod must leave a node with these NoExecute
// taints: the earliest of evictionTime over them, the managed ones with the
// eviction timeout (berth gives pods no default toleration of them) and an
// operator's at once when not tolerated, as Kubernetes' taint manager. The
// taint it returns is the one that decides; false when the pod tolerates
// every one for good.
func podEvictionTime(pod *api.Pod, taints []*api.Taint, timeout time.Duration) (time.Time, *api.Taint, bool) {
	var at time.Time
	var by *api.Taint
	for _, taint := range taints {
		d := time.Duration(0)
		if isManaged(*taint) {
			d = timeout
		}
		t, ok := evictionTime(pod, taint, d)
		if ok && (by == nil || t.Before(at)) {
			at, by = t, taint
		}
	}
	return at, by, by != nil
}

// evictionTime is when a pod on a node carrying the NoExecute taint must
// go, as Kubernetes' taint manager decides it: a pod that does not tolerate
// the taint goes timeout after the taint was added; one that tolerates it
// goes after the shortest tolerationSeconds of its matching tolerations, and
// never if one of them has no tolerationSeconds.
//
// berth's defaulting adds no not-ready/unreachable tolerations to pods (there
// is no DefaultTolerationSeconds admission), so by default a pod goes after
// the eviction timeout alone; a pod that asks for a toleration gets exactly
// what it asked for.
func evictionTime(pod *api.Pod, taint *api.Taint, timeout time.Duration) (time.Time, bool) {
	added := taint.TimeAdded.Time
	tolerated := false
	var least int64
	for i := range pod.Spec.Tolerations {
		t := &pod.Spec.Tolerations[i]
		if !t.ToleratesTaint(taint) {
			continue
		}
		if t.TolerationSeconds == nil {
			return time.Time{}, false
		}
		s := max(*t.TolerationSeconds, 0)
		if !tolerated || s < least {
			least = s
		}
		tolerated = true
	}
	if tolerated {
		return added.Add(time.Duration(least) * time.Second), true
	}
	return added.Add(timeout), true
}
