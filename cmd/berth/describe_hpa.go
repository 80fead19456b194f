package main

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/berth-dev/berth/api"
)

// describeHPA follows kubectl describe hpa: each metric's current and
// target value, the bounds, the behaviour, the target's replicas and the
// conditions.
func describeHPA(w *describeWriter, obj api.Object, _ *describeContext) {
	h := obj.(*api.HorizontalPodAutoscaler)
	describeHeader(w, h, true)
	w.write(level0, "CreationTimestamp:\t%s\n", formatTime(h.CreationTimestamp))
	w.write(level0, "Reference:\t%s/%s\n", h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
	w.write(level0, "Metrics:\t( current / target )\n")
	for i, m := range h.Spec.Metrics {
		var st autoscalingv2.MetricStatus
		if i < len(h.Status.CurrentMetrics) {
			st = h.Status.CurrentMetrics[i]
		}
		switch m.Type {
		case autoscalingv2.ResourceMetricSourceType:
			w.write(level1, "resource %s on pods", m.Resource.Name)
			var cur *autoscalingv2.MetricValueStatus
			if st.Resource != nil {
				cur = &st.Resource.Current
			}
			describeResourceTarget(w, m.Resource.Target, cur)
		case autoscalingv2.ContainerResourceMetricSourceType:
			w.write(level1, "resource %s of container \"%s\" on pods", m.ContainerResource.Name, m.ContainerResource.Container)
			var cur *autoscalingv2.MetricValueStatus
			if st.ContainerResource != nil {
				cur = &st.ContainerResource.Current
			}
			describeResourceTarget(w, m.ContainerResource.Target, cur)
		case autoscalingv2.PodsMetricSourceType:
			current := "<unknown>"
			if st.Pods != nil && st.Pods.Current.AverageValue != nil {
				current = st.Pods.Current.AverageValue.String()
			}
			w.write(level1, "\"%s\" on pods:\t%s / %s\n", m.Pods.Metric.Name, current, m.Pods.Target.AverageValue.String())
		default:
			w.write(level1, "<unknown metric type %q>\n", string(m.Type))
		}
	}
	minReplicas := "<unset>"
	if h.Spec.MinReplicas != nil {
		minReplicas = fmt.Sprint(*h.Spec.MinReplicas)
	}
	w.write(level0, "Min replicas:\t%s\n", minReplicas)
	w.write(level0, "Max replicas:\t%d\n", h.Spec.MaxReplicas)
	if b := h.Spec.Behavior; b != nil {
		w.write(level0, "Behavior:\n")
		describeScalingRules(w, "Scale Up", b.ScaleUp)
		describeScalingRules(w, "Scale Down", b.ScaleDown)
	}
	w.write(level0, "%s pods:\t%d current / %d desired\n", h.Spec.ScaleTargetRef.Kind, h.Status.CurrentReplicas, h.Status.DesiredReplicas)
	if len(h.Status.Conditions) > 0 {
		w.write(level0, "Conditions:\n")
		w.write(level1, "Type\tStatus\tReason\tMessage\n")
		w.write(level1, "----\t------\t------\t-------\n")
		for _, c := range h.Status.Conditions {
			w.write(level1, "%v\t%v\t%v\t%v\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
}

func describeResourceTarget(w *describeWriter, t autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) {
	current := "<unknown>"
	if t.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		w.write(level0, ":\t%s / %s\n", current, t.AverageValue.String())
		return
	}
	if cur != nil && cur.AverageUtilization != nil {
		current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
		if cur.AverageValue != nil {
			current += " (" + cur.AverageValue.String() + ")"
		}
	}
	target := "<auto>"
	if t.AverageUtilization != nil {
		target = fmt.Sprintf("%d%%", *t.AverageUtilization)
	}
	w.write(level1, "(as a percentage of request):\t%s / %s\n", current, target)
}

func describeScalingRules(w *describeWriter, direction string, r *autoscalingv2.HPAScalingRules) {
	if r == nil {
		return
	}
	w.write(level1, "%s:\n", direction)
	if r.StabilizationWindowSeconds != nil {
		w.write(level2, "Stabilization Window: %d seconds\n", *r.StabilizationWindowSeconds)
	}
	if len(r.Policies) == 0 {
		return
	}
	sel := autoscalingv2.MaxChangePolicySelect
	if r.SelectPolicy != nil {
		sel = *r.SelectPolicy
	}
	w.write(level2, "Select Policy: %s\n", sel)
	w.write(level2, "Policies:\n")
	for _, p := range r.Policies {
		w.write(level3, "- Type: %s\tValue: %d\tPeriod: %d seconds\n", p.Type, p.Value, p.PeriodSeconds)
	}
}
