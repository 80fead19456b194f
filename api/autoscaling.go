package api

import (
	"fmt"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// +kubebuilder:object:root=true

// HorizontalPodAutoscaler keeps the replicas of a Deployment, ReplicaSet,
// StatefulSet or ReplicationController where its pods' CPU and memory use
// meet a target, as Kubernetes' autoscaling/v2 does. Its spec and status
// are Kubernetes' own types: berth stores every field of them, and its
// controller reads the resource metrics the agents sample (those of
// metrics.k8s.io); a Pods, Object or External metric it cannot read makes
// the ScalingActive condition say so.
type HorizontalPodAutoscaler struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the target, the bounds, the metrics and the scaling
	// behaviour.
	Spec autoscalingv2.HorizontalPodAutoscalerSpec `json:"spec,omitempty"`
	// Status is what the controller last saw and decided.
	Status autoscalingv2.HorizontalPodAutoscalerStatus `json:"status,omitempty"`
}

// DefaultCPUUtilization is the target of an autoscaler that names no
// metric, as Kubernetes defaults it.
const DefaultCPUUtilization = 80

// Kubernetes' bounds of an autoscaler's behaviour.
const (
	MaxHPAPeriodSeconds              = 1800
	MaxHPAStabilizationWindowSeconds = 3600
	// DefaultHPAScaleDownStabilization is the scale-down window of an
	// autoscaler that sets none: kube-controller-manager's
	// --horizontal-pod-autoscaler-downscale-stabilization.
	DefaultHPAScaleDownStabilization = 300
)

// DefaultHPAScaleUpRules are Kubernetes' scale-up rules: no
// stabilisation, and the most of 4 pods or 100% each 15 seconds.
func DefaultHPAScaleUpRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptrTo[int32](0),
		SelectPolicy:               ptrTo(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// DefaultHPAScaleDownRules are Kubernetes' scale-down rules: the
// controller's five-minute window, and 100% each 15 seconds.
func DefaultHPAScaleDownRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		SelectPolicy: ptrTo(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// defaultHPA follows Kubernetes' SetDefaults_HorizontalPodAutoscaler:
// minReplicas 1, a CPU target of 80% when no metric is named, and a
// behaviour's missing rules and fields from the defaults.
func defaultHPA(h *HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		h.Spec.MinReplicas = ptrTo[int32](1)
	}
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptrTo[int32](DefaultCPUUtilization)},
		}}}
	}
	if b := h.Spec.Behavior; b != nil {
		b.ScaleUp = fillRules(b.ScaleUp, DefaultHPAScaleUpRules())
		b.ScaleDown = fillRules(b.ScaleDown, DefaultHPAScaleDownRules())
	}
}

func fillRules(r, def *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if r == nil {
		return def
	}
	if r.StabilizationWindowSeconds == nil {
		r.StabilizationWindowSeconds = def.StabilizationWindowSeconds
	}
	if r.SelectPolicy == nil {
		r.SelectPolicy = def.SelectPolicy
	}
	if len(r.Policies) == 0 {
		r.Policies = def.Policies
	}
	return r
}

var (
	metricSourceTypes = []autoscalingv2.MetricSourceType{autoscalingv2.ContainerResourceMetricSourceType, autoscalingv2.ExternalMetricSourceType,
		autoscalingv2.ObjectMetricSourceType, autoscalingv2.PodsMetricSourceType, autoscalingv2.ResourceMetricSourceType}
	selectPolicies = []autoscalingv2.ScalingPolicySelect{autoscalingv2.DisabledPolicySelect, autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect}
	policyTypes    = []autoscalingv2.HPAScalingPolicyType{autoscalingv2.PercentScalingPolicy, autoscalingv2.PodsScalingPolicy}
)

// validateHPASpec follows Kubernetes' validation of an autoscaling/v2
// HorizontalPodAutoscaler, in its words.
func validateHPASpec(s *autoscalingv2.HorizontalPodAutoscalerSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.MinReplicas != nil && *s.MinReplicas < 1 {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *s.MinReplicas, "must be greater than or equal to 1"))
	}
	if s.MaxReplicas < 1 {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "must be greater than 0"))
	}
	if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	if ref := validateCrossVersionRef(s.ScaleTargetRef, p.Child("scaleTargetRef")); len(ref) > 0 {
		return append(errs, ref...)
	}
	if m := validateMetrics(s.Metrics, p.Child("metrics")); len(m) > 0 {
		return append(errs, m...)
	}
	if b := s.Behavior; b != nil {
		errs = append(errs, validateScalingRules(b.ScaleUp, p.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateScalingRules(b.ScaleDown, p.Child("behavior", "scaleDown"))...)
	}
	return errs
}

func validateCrossVersionRef(ref autoscalingv2.CrossVersionObjectReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ name, value string }{{"kind", ref.Kind}, {"name", ref.Name}} {
		if f.value == "" {
			errs = append(errs, field.Required(p.Child(f.name), ""))
			continue
		}
		for _, msg := range path.IsValidPathSegmentName(f.value) {
			errs = append(errs, field.Invalid(p.Child(f.name), f.value, msg))
		}
	}
	return errs
}

func validateMetrics(metrics []autoscalingv2.MetricSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, m := range metrics {
		errs = append(errs, validateMetricSpec(m, p.Index(i))...)
	}
	return errs
}

func validateMetricSpec(m autoscalingv2.MetricSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric source type"))
	}
	present := map[autoscalingv2.MetricSourceType]bool{}
	for _, src := range []struct {
		typ  autoscalingv2.MetricSourceType
		set  bool
		errs func() field.ErrorList
	}{
		{autoscalingv2.ObjectMetricSourceType, m.Object != nil, func() field.ErrorList { return validateObjectSource(m.Object, p.Child("object")) }},
		{autoscalingv2.ExternalMetricSourceType, m.External != nil, func() field.ErrorList { return validateExternalSource(m.External, p.Child("external")) }},
		{autoscalingv2.PodsMetricSourceType, m.Pods != nil, func() field.ErrorList { return validatePodsSource(m.Pods, p.Child("pods")) }},
		{autoscalingv2.ResourceMetricSourceType, m.Resource != nil, func() field.ErrorList {
			return validateResourceSource(m.Resource.Name, m.Resource.Target, p.Child("resource"))
		}},
		{autoscalingv2.ContainerResourceMetricSourceType, m.ContainerResource != nil, func() field.ErrorList {
			errs := validateResourceSource(m.ContainerResource.Name, m.ContainerResource.Target, p.Child("containerResource"))
			if m.ContainerResource.Container == "" {
				errs = append(errs, field.Required(p.Child("containerResource", "container"), "must specify a container"))
			}
			return errs
		}},
	} {
		if !src.set {
			continue
		}
		present[src.typ] = true
		if len(present) == 1 {
			errs = append(errs, src.errs()...)
		}
	}
	fieldOf := map[autoscalingv2.MetricSourceType]string{
		autoscalingv2.ObjectMetricSourceType: "object", autoscalingv2.PodsMetricSourceType: "pods", autoscalingv2.ResourceMetricSourceType: "resource",
		autoscalingv2.ContainerResourceMetricSourceType: "containerResource", autoscalingv2.ExternalMetricSourceType: "external",
	}
	switch name, ok := fieldOf[m.Type]; {
	case !ok && m.Type != "":
		errs = append(errs, fieldNotSupported(p.Child("type"), m.Type, metricSourceTypes))
	case ok && !present[m.Type]:
		errs = append(errs, field.Required(p.Child(name), "must populate information for the given metric source"))
	}
	if len(present) > 1 {
		for _, t := range metricSourceTypes {
			if present[t] && t != m.Type {
				errs = append(errs, field.Forbidden(p.Child(fieldOf[t]), "must populate the given metric source only"))
			}
		}
	}
	return errs
}

func validateResourceSource(name corev1.ResourceName, target autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case name == "":
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	case !slices.Contains(containerResources, ResourceName(name)) && !strings.Contains(string(name), "/"):
		errs = append(errs, field.Invalid(p.Child("name"), name, "must be a standard resource for containers"))
	}
	if target.AverageUtilization == nil && target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	errs = append(errs, validateMetricTarget(target, p.Child("target"))...)
	if target.AverageUtilization != nil && target.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

func validateMetricIdentifier(id autoscalingv2.MetricIdentifier, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if id.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a metric name"))
	} else {
		for _, msg := range path.IsValidPathSegmentName(id.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), id.Name, msg))
		}
	}
	return append(errs, validateLabelSelector(id.Selector, false, p.Child("selector"))...)
}

func validateObjectSource(src *autoscalingv2.ObjectMetricSource, p *field.Path) field.ErrorList {
	errs := validateCrossVersionRef(src.DescribedObject, p.Child("describedObject"))
	errs = append(errs, validateMetricIdentifier(src.Metric, p.Child("metric"))...)
	errs = append(errs, validateMetricTarget(src.Target, p.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value or averageValue"))
	}
	return errs
}

func validateExternalSource(src *autoscalingv2.ExternalMetricSource, p *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(src.Metric, p.Child("metric"))
	errs = append(errs, validateMetricTarget(src.Target, p.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value for metric or a per-pod target"))
	}
	if src.Target.Value != nil && src.Target.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "value"), "may not set both a target value for metric and a per-pod target"))
	}
	return errs
}

func validatePodsSource(src *autoscalingv2.PodsMetricSource, p *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(src.Metric, p.Child("metric"))
	errs = append(errs, validateMetricTarget(src.Target, p.Child("target"))...)
	if src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must specify a positive target averageValue"))
	}
	return errs
}

func validateMetricTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric target type"))
	}
	if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		errs = append(errs, field.Invalid(p.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("value"), t.Value.String(), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("averageValue"), t.AverageValue.String(), "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(p.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

func validateScalingRules(r *autoscalingv2.HPAScalingRules, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil && *w < 0 {
		errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w, "must be greater than or equal to zero"))
	} else if w != nil && *w > MaxHPAStabilizationWindowSeconds {
		errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w, fmt.Sprintf("must be less than or equal to %d", MaxHPAStabilizationWindowSeconds)))
	}
	if s := r.SelectPolicy; s != nil && !slices.Contains(selectPolicies, *s) {
		errs = append(errs, fieldNotSupported(p.Child("selectPolicy"), *s, selectPolicies))
	}
	pp := p.Child("policies")
	if len(r.Policies) == 0 {
		errs = append(errs, field.Required(pp, "must specify at least one Policy"))
	}
	for i, pol := range r.Policies {
		ip := pp.Index(i)
		if !slices.Contains(policyTypes, pol.Type) {
			errs = append(errs, fieldNotSupported(ip.Child("type"), pol.Type, policyTypes))
		}
		if pol.Value <= 0 {
			errs = append(errs, field.Invalid(ip.Child("value"), pol.Value, "must be greater than zero"))
		}
		if pol.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), pol.PeriodSeconds, "must be greater than zero"))
		} else if pol.PeriodSeconds > MaxHPAPeriodSeconds {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), pol.PeriodSeconds, fmt.Sprintf("must be less than or equal to %d", MaxHPAPeriodSeconds)))
		}
	}
	if t := r.Tolerance; t != nil && t.Sign() < 0 {
		errs = append(errs, field.Invalid(p.Child("tolerance"), t.String(), "must be greater than or equal to zero"))
	}
	return errs
}

func fieldNotSupported[T ~string](p *field.Path, v T, valid []T) *field.Error {
	return field.NotSupported(p, v, valid)
}
