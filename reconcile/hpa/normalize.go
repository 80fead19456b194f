package hpa

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Reasons and messages of the AbleToScale and ScalingLimited conditions,
// as Kubernetes gives them.
const (
	reasonScaleDownStabilized = "ScaleDownStabilized"
	reasonReadyForNewScale    = "ReadyForNewScale"
	reasonTooFewReplicas      = "TooFewReplicas"
	reasonTooManyReplicas     = "TooManyReplicas"
	reasonScaleUpLimit        = "ScaleUpLimit"
	reasonScaleDownLimit      = "ScaleDownLimit"
	reasonDesiredWithinRange  = "DesiredWithinRange"

	msgStabilized     = "recent recommendations were higher than current one, applying the highest recent recommendation"
	msgReady          = "recommended size matches current size"
	msgTooFew         = "the desired replica count is less than the minimum replica count"
	msgTooMany        = "the desired replica count is more than the maximum replica count"
	msgScaleUpLimit   = "the desired replica count is increasing faster than the maximum scale rate"
	msgScaleDownLimit = "the desired replica count is decreasing faster than the maximum scale rate"
	msgWithinRange    = "the desired count is within the acceptable range"
)

// recommendation is a desired count the metrics gave at a time.
type recommendation struct {
	replicas int32
	at       time.Time
}

// scaleEvent is a change the controller made to the target's replicas.
type scaleEvent struct {
	change int32
	at     time.Time
}

// history is what the controller remembers of one autoscaler between
// its syncs, as kube-controller-manager does: in memory, so a new leader
// starts without it.
type history struct {
	recommendations []recommendation
	ups, downs      []scaleEvent
}

// verdict is a normalised count and the conditions it sets.
type verdict struct {
	replicas                      int32
	ableReason, ableMessage       string
	limited                       bool
	limitedReason, limitedMessage string
}

// normalize is Kubernetes' normalizeDesiredReplicas, for an autoscaler
// without behaviour: the highest recommendation of the stabilisation
// window, then min, max and a scale up of at most double (or 4).
func (h *history) normalize(now time.Time, window time.Duration, current, desired, minR, maxR int32) verdict {
	stabilized := desired
	cutoff := now.Add(-window)
	replaced := false
	for i, r := range h.recommendations {
		if r.at.Before(cutoff) {
			if !replaced {
				h.recommendations[i] = recommendation{desired, now}
				replaced = true
			}
			continue
		}
		stabilized = max(stabilized, r.replicas)
	}
	if !replaced {
		h.recommendations = append(h.recommendations, recommendation{desired, now})
	}
	v := verdict{ableReason: reasonReadyForNewScale, ableMessage: msgReady}
	if stabilized != desired {
		v.ableReason, v.ableMessage = reasonScaleDownStabilized, msgStabilized
	}
	scaleUpLimit := max(2*current, 4)
	maxAllowed := min(maxR, scaleUpLimit)
	v.replicas, v.limitedReason, v.limitedMessage = stabilized, reasonDesiredWithinRange, msgWithinRange
	switch {
	case stabilized < minR:
		v.replicas, v.limitedReason, v.limitedMessage = minR, reasonTooFewReplicas, msgTooFew
	case stabilized > maxAllowed:
		v.replicas = maxAllowed
		if maxR > scaleUpLimit {
			v.limitedReason, v.limitedMessage = reasonScaleUpLimit, msgScaleUpLimit
		} else {
			v.limitedReason, v.limitedMessage = reasonTooManyReplicas, msgTooMany
		}
	}
	v.limited = v.replicas != stabilized
	return v
}

// normalizeWithBehavior is Kubernetes' normalizeDesiredReplicasWithBehaviors:
// the recommendation bounded by those of each direction's stabilisation
// window, then by the policies' rate over the changes of their periods,
// and by min and max.
func (h *history) normalizeWithBehavior(now time.Time, b *autoscalingv2.HorizontalPodAutoscalerBehavior, defaultDown time.Duration, current, desired, minR, maxR int32) verdict {
	upWindow := seconds(b.ScaleUp.StabilizationWindowSeconds, 0)
	downWindow := seconds(b.ScaleDown.StabilizationWindowSeconds, defaultDown)
	up, down := desired, desired
	obsolete := now.Add(-max(upWindow, downWindow))
	replaced := false
	for i, r := range h.recommendations {
		if r.at.After(now.Add(-upWindow)) {
			up = min(up, r.replicas)
		}
		if r.at.After(now.Add(-downWindow)) {
			down = max(down, r.replicas)
		}
		if r.at.Before(obsolete) && !replaced {
			h.recommendations[i] = recommendation{desired, now}
			replaced = true
		}
	}
	if !replaced {
		h.recommendations = append(h.recommendations, recommendation{desired, now})
	}
	stabilized := max(current, up)
	stabilized = min(stabilized, down)

	v := verdict{ableReason: reasonReadyForNewScale, ableMessage: msgReady}
	if stabilized != desired {
		v.ableReason, v.ableMessage = reasonScaleDownStabilized, msgStabilized
	}
	v.replicas, v.limitedReason, v.limitedMessage = stabilized, reasonDesiredWithinRange, msgWithinRange
	switch {
	case stabilized > current:
		limit := max(scaleUpLimit(now, current, h.ups, b.ScaleUp), current)
		maxAllowed, reason, msg := maxR, reasonTooManyReplicas, msgTooMany
		if maxAllowed > limit {
			maxAllowed, reason, msg = limit, reasonScaleUpLimit, msgScaleUpLimit
		}
		if stabilized > maxAllowed {
			v.replicas, v.limitedReason, v.limitedMessage = maxAllowed, reason, msg
		}
	case stabilized < current:
		limit := min(scaleDownLimit(now, current, h.downs, b.ScaleDown), current)
		minAllowed, reason, msg := minR, reasonTooFewReplicas, msgTooFew
		if minAllowed < limit {
			minAllowed, reason, msg = limit, reasonScaleDownLimit, msgScaleDownLimit
		}
		if stabilized < minAllowed {
			v.replicas, v.limitedReason, v.limitedMessage = minAllowed, reason, msg
		}
	}
	v.limited = v.replicas != stabilized
	return v
}

func seconds(s *int32, def time.Duration) time.Duration {
	if s == nil {
		return def
	}
	return time.Duration(*s) * time.Second
}

// changedIn sums the changes of the period before now.
func changedIn(now time.Time, periodSeconds int32, events []scaleEvent) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var sum int32
	for _, e := range events {
		if e.at.After(cutoff) {
			sum += e.change
		}
	}
	return sum
}

// scaleUpLimit is Kubernetes' calculateScaleUpLimitWithScalingRules.
func scaleUpLimit(now time.Time, current int32, events []scaleEvent, r *autoscalingv2.HPAScalingRules) int32 {
	if *r.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	pick, result := maxOf, int32(math.MinInt32)
	if *r.SelectPolicy == autoscalingv2.MinChangePolicySelect {
		pick, result = minOf, math.MaxInt32
	}
	for _, p := range r.Policies {
		start := current - changedIn(now, p.PeriodSeconds, events)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start + p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		result = pick(result, proposed)
	}
	return result
}

// scaleDownLimit is Kubernetes' calculateScaleDownLimitWithBehaviors.
func scaleDownLimit(now time.Time, current int32, events []scaleEvent, r *autoscalingv2.HPAScalingRules) int32 {
	if *r.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	pick, result := minOf, int32(math.MaxInt32)
	if *r.SelectPolicy == autoscalingv2.MinChangePolicySelect {
		pick, result = maxOf, math.MinInt32
	}
	for _, p := range r.Policies {
		start := current + changedIn(now, p.PeriodSeconds, events)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

func maxOf(a, b int32) int32 { return max(a, b) }
func minOf(a, b int32) int32 { return min(a, b) }

// record keeps a change the controller made, for the policies' periods;
// events older than the direction's longest period are forgotten, as
// Kubernetes' storeScaleEvent does.
func (h *history) record(now time.Time, b *autoscalingv2.HorizontalPodAutoscalerBehavior, prev, next int32) {
	if b == nil {
		return
	}
	if next > prev {
		h.ups = append(trim(now, h.ups, b.ScaleUp), scaleEvent{change: next - prev, at: now})
	} else if next < prev {
		h.downs = append(trim(now, h.downs, b.ScaleDown), scaleEvent{change: prev - next, at: now})
	}
}

func trim(now time.Time, events []scaleEvent, r *autoscalingv2.HPAScalingRules) []scaleEvent {
	var longest int32
	for _, p := range r.Policies {
		longest = max(longest, p.PeriodSeconds)
	}
	cutoff := now.Add(-time.Duration(longest) * time.Second)
	out := events[:0]
	for _, e := range events {
		if e.at.After(cutoff) {
			out = append(out, e)
		}
	}
	return out
}
