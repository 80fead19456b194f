package table

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/api"
)

// An autoscaler's columns, as kubectl prints them.
func init() {
	definitions["HorizontalPodAutoscaler"] = []Column{
		nameColumn,
		{Name: "Reference", Type: "string", Description: "Reference to the scale target.",
			cell: on(func(h *api.HorizontalPodAutoscaler, _ time.Time) string {
				return h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name
			})},
		{Name: "Targets", Type: "string", Description: "The current and target values of each metric.",
			cell: on(func(h *api.HorizontalPodAutoscaler, _ time.Time) string {
				return FormatHPAMetrics(h.Spec.Metrics, h.Status.CurrentMetrics)
			})},
		{Name: "MinPods", Type: "string", Description: "The least replicas the autoscaler keeps.",
			cell: on(func(h *api.HorizontalPodAutoscaler, _ time.Time) string {
				if h.Spec.MinReplicas == nil {
					return "<unset>"
				}
				return intCell(*h.Spec.MinReplicas)
			})},
		{Name: "MaxPods", Type: "integer", Description: "The most replicas the autoscaler makes.",
			cell: on(func(h *api.HorizontalPodAutoscaler, _ time.Time) string { return intCell(h.Spec.MaxReplicas) })},
		{Name: "Replicas", Type: "integer", Description: "The target's current replicas.",
			cell: on(func(h *api.HorizontalPodAutoscaler, _ time.Time) string { return intCell(h.Status.CurrentReplicas) })},
		ageColumn,
	}
}

// FormatHPAMetrics is kubectl's TARGETS cell: "cpu: 40%/80%" for each of
// the first two metrics, "<unknown>" where the controller has no current
// value, and how many more there are.
func FormatHPAMetrics(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	const most = 2
	var list []string
	status := func(i int) *autoscalingv2.MetricStatus {
		if i < len(statuses) {
			return &statuses[i]
		}
		return &autoscalingv2.MetricStatus{}
	}
	for i, spec := range specs {
		st := status(i)
		current := "<unknown>"
		switch spec.Type {
		case autoscalingv2.ExternalMetricSourceType:
			list = append(list, valueCell(spec.External.Target, func() *autoscalingv2.MetricValueStatus {
				if st.External == nil {
					return nil
				}
				return &st.External.Current
			}()))
		case autoscalingv2.PodsMetricSourceType:
			if st.Pods != nil && st.Pods.Current.AverageValue != nil {
				current = st.Pods.Current.AverageValue.String()
			}
			list = append(list, current+"/"+quantityString(spec.Pods.Target.AverageValue))
		case autoscalingv2.ObjectMetricSourceType:
			list = append(list, valueCell(spec.Object.Target, func() *autoscalingv2.MetricValueStatus {
				if st.Object == nil {
					return nil
				}
				return &st.Object.Current
			}()))
		case autoscalingv2.ResourceMetricSourceType:
			var cur *autoscalingv2.MetricValueStatus
			if st.Resource != nil {
				cur = &st.Resource.Current
			}
			list = append(list, string(spec.Resource.Name)+": "+resourceCell(spec.Resource.Target, cur))
		case autoscalingv2.ContainerResourceMetricSourceType:
			var cur *autoscalingv2.MetricValueStatus
			if st.ContainerResource != nil {
				cur = &st.ContainerResource.Current
			}
			list = append(list, string(spec.ContainerResource.Name)+": "+resourceCell(spec.ContainerResource.Target, cur))
		default:
			list = append(list, "<unknown type>")
		}
	}
	if len(list) > most {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:most], ", "), len(list)-most)
	}
	return strings.Join(list, ", ")
}

func resourceCell(t autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if t.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return current + "/" + t.AverageValue.String()
	}
	if cur != nil && cur.AverageUtilization != nil {
		current = strconv.Itoa(int(*cur.AverageUtilization)) + "%"
	}
	target := "<auto>"
	if t.AverageUtilization != nil {
		target = strconv.Itoa(int(*t.AverageUtilization)) + "%"
	}
	return current + "/" + target
}

// valueCell is an Object or External metric's cell: an average value
// marked (avg), or a value.
func valueCell(t autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if t.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return current + "/" + t.AverageValue.String() + " (avg)"
	}
	if cur != nil && cur.Value != nil {
		current = cur.Value.String()
	}
	return current + "/" + quantityString(t.Value)
}

func quantityString(q *resource.Quantity) string {
	if q == nil {
		return "<nil>"
	}
	return q.String()
}
