package api

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

func TestValidateHPA(t *testing.T) {
	runValidation(t, func() *HorizontalPodAutoscaler {
		return &HorizontalPodAutoscaler{ObjectMeta: meta("web"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas:    5,
			Behavior:       &autoscalingv2.HorizontalPodAutoscalerBehavior{},
		}}
	}, []validationCase[*HorizontalPodAutoscaler]{
		{"max under min", func(o *HorizontalPodAutoscaler) { o.Spec.MinReplicas = ptrTo[int32](6) },
			[]string{"spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`"}},
		{"min zero", func(o *HorizontalPodAutoscaler) { o.Spec.MinReplicas = ptrTo[int32](0) },
			[]string{"spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"}},
		{"no target", func(o *HorizontalPodAutoscaler) { o.Spec.ScaleTargetRef.Name = "" },
			[]string{"spec.scaleTargetRef.name: Required value"}},
		{"no utilization", func(o *HorizontalPodAutoscaler) { o.Spec.Metrics[0].Resource.Target.AverageUtilization = nil },
			[]string{"spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization"}},
		{"two sources", func(o *HorizontalPodAutoscaler) {
			o.Spec.Metrics[0].ContainerResource = &autoscalingv2.ContainerResourceMetricSource{}
		}, []string{"spec.metrics[0].containerResource: Forbidden: must populate the given metric source only"}},
		{"missing source", func(o *HorizontalPodAutoscaler) { o.Spec.Metrics[0].Type = autoscalingv2.PodsMetricSourceType },
			[]string{"spec.metrics[0].pods: Required value: must populate information for the given metric source"}},
		{"policy period", func(o *HorizontalPodAutoscaler) { o.Spec.Behavior.ScaleUp.Policies[0].PeriodSeconds = 3600 },
			[]string{"spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 3600: must be less than or equal to 1800"}},
		{"window", func(o *HorizontalPodAutoscaler) {
			o.Spec.Behavior.ScaleDown.StabilizationWindowSeconds = ptrTo[int32](-1)
		},
			[]string{"spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: -1: must be greater than or equal to zero"}},
		{"select policy", func(o *HorizontalPodAutoscaler) {
			p := autoscalingv2.ScalingPolicySelect("Most")
			o.Spec.Behavior.ScaleDown.SelectPolicy = &p
		}, []string{`spec.behavior.scaleDown.selectPolicy: Unsupported value: "Most"`}},
	})
}

// TestDefaultHPA: minReplicas 1, cpu at 80%, and a behaviour's rules
// filled from Kubernetes' defaults.
func TestDefaultHPA(t *testing.T) {
	h := &HorizontalPodAutoscaler{ObjectMeta: meta("web"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptrTo[int32](60)}}}}
	Default(h)
	if *h.Spec.MinReplicas != 1 || *h.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 {
		t.Errorf("spec %+v", h.Spec)
	}
	b := h.Spec.Behavior
	if len(b.ScaleUp.Policies) != 2 || *b.ScaleUp.StabilizationWindowSeconds != 0 || *b.ScaleDown.StabilizationWindowSeconds != 60 ||
		len(b.ScaleDown.Policies) != 1 || *b.ScaleDown.SelectPolicy != autoscalingv2.MaxChangePolicySelect {
		t.Errorf("behavior %+v %+v", b.ScaleUp, b.ScaleDown)
	}
}
