package workload

import (
	"cmp"
	"math"
	"slices"
)

// ScaleRS is what proportional scaling needs of one ReplicaSet.
type ScaleRS struct {
	RSCounts
	// Desired is the Deployment's replicas when the controller last
	// scaled the ReplicaSet (the desired-replicas annotation), if
	// HasDesired.
	Desired    int32
	HasDesired bool
	// MaxReplicas is the Deployment's replicas plus surge then (the
	// max-replicas annotation), 0 if unknown.
	MaxReplicas int32
}

// Scaling is the state a change of a Deployment's replicas is spread
// from.
type Scaling struct {
	// Replicas and MaxSurge are the Deployment's, resolved.
	Replicas, MaxSurge int32
	RollingUpdate      bool
	// StatusReplicas is the Deployment's status.replicas, the size a
	// ReplicaSet with no max-replicas annotation was scaled for.
	StatusReplicas int32
	// New is the ReplicaSet of the current template, nil if there is none
	// yet; Old are the others.
	New *ScaleRS
	Old []ScaleRS
}

// IsScalingEvent reports whether the Deployment's replicas changed since
// the controller last scaled an active ReplicaSet, as Kubernetes'
// isScalingEvent: then the change is spread over the ReplicaSets before
// the rollout moves on.
func IsScalingEvent(s Scaling) bool {
	for _, rs := range s.all() {
		if rs.Replicas > 0 && rs.HasDesired && rs.Desired != s.Replicas {
			return true
		}
	}
	return false
}

func (s Scaling) all() []ScaleRS {
	all := slices.Clone(s.Old)
	if s.New != nil {
		all = append(all, *s.New)
	}
	return all
}

// ProportionalScale is Kubernetes' scale of a Deployment's ReplicaSets to
// its replicas: a single active ReplicaSet (or, with none, the newest)
// takes them all; a saturated new one leaves the old ones none; in a
// rolling update, the difference to replicas plus surge is spread over
// the active ReplicaSets in proportion to their sizes, the leftover to
// the largest (the newest of equals when adding, the oldest when
// removing). It returns the sizes to write, by name, those unchanged
// included: their annotations are written with them.
func ProportionalScale(s Scaling) map[string]int32 {
	all := s.all()
	var active []ScaleRS
	for _, rs := range all {
		if rs.Replicas > 0 {
			active = append(active, rs)
		}
	}
	switch {
	case len(all) == 0:
		return nil
	case len(active) == 1:
		return map[string]int32{active[0].Name: s.Replicas}
	case len(active) == 0:
		latest := slices.MaxFunc(all, byCreation)
		if s.New != nil {
			latest = *s.New
		}
		return map[string]int32{latest.Name: s.Replicas}
	}
	if n := s.New; n != nil && n.Replicas == s.Replicas && n.HasDesired && n.Desired == s.Replicas && n.Available == s.Replicas {
		out := map[string]int32{}
		for _, rs := range s.Old {
			if rs.Replicas > 0 {
				out[rs.Name] = 0
			}
		}
		return out
	}
	if !s.RollingUpdate {
		return nil
	}
	var total int32
	for _, rs := range active {
		total += rs.Replicas
	}
	allowed := int32(0)
	if s.Replicas > 0 {
		allowed = s.Replicas + s.MaxSurge
	}
	toAdd := allowed - total
	switch {
	case toAdd > 0:
		// Largest first, the newer of equals first.
		slices.SortStableFunc(active, func(a, b ScaleRS) int {
			return cmp.Or(cmp.Compare(b.Replicas, a.Replicas), byCreation(b, a))
		})
	case toAdd < 0:
		// Largest first, the older of equals first.
		slices.SortStableFunc(active, func(a, b ScaleRS) int {
			return cmp.Or(cmp.Compare(b.Replicas, a.Replicas), byCreation(a, b))
		})
	}
	out := make(map[string]int32, len(active))
	var added int32
	for _, rs := range active {
		p := proportion(rs, s, toAdd, added)
		out[rs.Name] = rs.Replicas + p
		added += p
	}
	if toAdd != 0 {
		first := active[0].Name
		out[first] = max(out[first]+toAdd-added, 0)
	}
	return out
}

func byCreation(a, b ScaleRS) int {
	return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Name, b.Name))
}

// proportion is Kubernetes' GetProportion: the ReplicaSet's share of
// toAdd, of which added is already given out, never beyond what is left.
func proportion(rs ScaleRS, s Scaling, toAdd, added int32) int32 {
	if rs.Replicas == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := fraction(rs, s)
	left := toAdd - added
	if toAdd > 0 {
		return min(fraction, left)
	}
	return max(fraction, left)
}

// fraction is Kubernetes' getReplicaSetFraction: how far the ReplicaSet
// moves when the Deployment goes from the size it was scaled for to
// replicas plus surge.
func fraction(rs ScaleRS, s Scaling) int32 {
	if s.Replicas == 0 {
		return -rs.Replicas
	}
	before := rs.MaxReplicas
	if before == 0 {
		before = s.StatusReplicas
		if before == 0 {
			return 0
		}
	}
	size := float64(rs.Replicas) * float64(s.Replicas+s.MaxSurge) / float64(before)
	return int32(math.Round(size)) - rs.Replicas
}
