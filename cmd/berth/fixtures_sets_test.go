package main

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

// fixtureStatefulSets: a database of 3 rolling out behind a partition,
// and a new one with no status yet.
func fixtureStatefulSets() []api.Object {
	db := &api.StatefulSet{ObjectMeta: meta("default", "db", 2*day, map[string]string{"app": "db"})}
	db.Spec = api.StatefulSetSpec{
		Replicas: ptr(int32(3)), ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		Template:            fixtureTemplate("db", "postgres:17"),
		PodManagementPolicy: api.OrderedReadyPodManagement,
		UpdateStrategy: api.StatefulSetUpdateStrategy{Type: api.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &api.RollingUpdateStatefulSetStrategy{Partition: ptr(int32(1)), MaxUnavailable: ptr(intstr.FromInt32(1))}},
		VolumeClaimTemplates: []api.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: api.PersistentVolumeClaimSpec{
			AccessModes: []api.PersistentVolumeAccessMode{api.ReadWriteOnce}, StorageClassName: ptr("local-path"),
			Resources: api.VolumeResourceRequirements{Requests: api.ResourceList{api.ResourceStorage: qty("1Gi")}},
		}}},
	}
	db.Status = api.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 2, CurrentReplicas: 1, UpdatedReplicas: 2,
		AvailableReplicas: 2, CurrentRevision: "db-5c9f7d6b8", UpdateRevision: "db-7b6d8f9c4"}
	cache := &api.StatefulSet{ObjectMeta: meta("shop", "cache", 20*time.Second, nil)}
	cache.Spec = api.StatefulSetSpec{Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache"}},
		Template: fixtureTemplate("cache", "redis:7"), PodManagementPolicy: api.ParallelPodManagement,
		UpdateStrategy: api.StatefulSetUpdateStrategy{Type: api.OnDeleteStatefulSetStrategyType}}
	return []api.Object{db, cache}
}

// fixtureDaemonSets: a log shipper on every Linux node, one of them
// misscheduled, and a new one.
func fixtureDaemonSets() []api.Object {
	logs := &api.DaemonSet{ObjectMeta: meta("default", "logs", 9*day, map[string]string{"app": "logs"})}
	logs.Spec = api.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "logs"}},
		Template: fixtureTemplate("logs", "fluent-bit:3"),
		UpdateStrategy: api.DaemonSetUpdateStrategy{Type: api.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &api.RollingUpdateDaemonSet{MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}}}
	logs.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	logs.Status = api.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 3,
		NumberAvailable: 2, NumberUnavailable: 1, NumberMisscheduled: 1, ObservedGeneration: 1}
	agent := &api.DaemonSet{ObjectMeta: meta("kube-system", "agent", 30*time.Second, nil)}
	agent.Spec = api.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
		Template: fixtureTemplate("agent", "agent:1"), UpdateStrategy: api.DaemonSetUpdateStrategy{Type: api.OnDeleteDaemonSetStrategyType}}
	return []api.Object{agent, logs}
}

// fixtureControllerRevisions: two revisions of the database.
func fixtureControllerRevisions() []api.Object {
	var out []api.Object
	for i, name := range []string{"db-5c9f7d6b8", "db-7b6d8f9c4"} {
		r := &api.ControllerRevision{ObjectMeta: meta("default", name, time.Duration(2-i)*day, map[string]string{"app": "db"})}
		r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "uid-default-db", Controller: ptr(true)}}
		r.Data = runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace"}}}`)}
		r.Revision = int64(i + 1)
		out = append(out, r)
	}
	return out
}

// fixtureLimitRanges: a range of every type in shop, and one of defaults
// only.
func fixtureLimitRanges() []api.Object {
	shop := &api.LimitRange{ObjectMeta: meta("shop", "bounds", 4*day, nil)}
	shop.Spec.Limits = []api.LimitRangeItem{
		{Type: api.LimitTypeContainer, Max: api.ResourceList{api.ResourceCPU: qty("2")}, Min: api.ResourceList{api.ResourceMemory: qty("32Mi")},
			Default: api.ResourceList{api.ResourceCPU: qty("500m"), api.ResourceMemory: qty("256Mi")}, DefaultRequest: api.ResourceList{api.ResourceCPU: qty("100m"), api.ResourceMemory: qty("64Mi")},
			MaxLimitRequestRatio: api.ResourceList{api.ResourceMemory: qty("4")}},
		{Type: api.LimitTypePod, Max: api.ResourceList{api.ResourceMemory: qty("2Gi")}},
		{Type: api.LimitTypePersistentVolumeClaim, Min: api.ResourceList{api.ResourceStorage: qty("1Gi")}, Max: api.ResourceList{api.ResourceStorage: qty("50Gi")}},
	}
	defaults := &api.LimitRange{ObjectMeta: meta("default", "defaults", 30*time.Second, nil)}
	defaults.Spec.Limits = []api.LimitRangeItem{{Type: api.LimitTypeContainer, DefaultRequest: api.ResourceList{api.ResourceCPU: qty("250m")}}}
	return []api.Object{shop, defaults}
}

// fixturePriorityClasses: the two system classes and a global default
// that never preempts.
func fixturePriorityClasses() []api.Object {
	var out []api.Object
	for _, pc := range api.SystemPriorityClasses() {
		pc.ObjectMeta = meta("", pc.Name, 10*day, nil)
		out = append(out, pc)
	}
	never := api.PreemptNever
	out = append(out, &api.PriorityClass{ObjectMeta: meta("", "batch", 2*time.Hour, nil), Value: 1000, GlobalDefault: true,
		Description: "Batch jobs wait for room.", PreemptionPolicy: &never})
	return out
}

// fixtureHPAs: an autoscaler at work on web, with a behaviour, and a new
// one whose controller has not looked yet.
func fixtureHPAs() []api.Object {
	web := &api.HorizontalPodAutoscaler{ObjectMeta: meta("default", "web", 3*day, nil)}
	web.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MinReplicas:    ptr(int32(2)), MaxReplicas: 10,
		Metrics: []autoscalingv2.MetricSpec{
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu",
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(60))}}},
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: "memory",
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(qty("200Mi"))}}},
		},
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(120)), SelectPolicy: ptr(autoscalingv2.MaxChangePolicySelect),
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}},
		},
	}
	web.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, DesiredReplicas: 4,
		CurrentMetrics: []autoscalingv2.MetricStatus{
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: "cpu",
				Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(int32(75)), AverageValue: ptr(qty("150m"))}}},
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: "memory",
				Current: autoscalingv2.MetricValueStatus{AverageValue: ptr(qty("120Mi"))}}},
		},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.AbleToScale, Status: "True", Reason: "SucceededRescale", Message: "the HPA controller was able to update the target scale to 4"},
			{Type: autoscalingv2.ScalingActive, Status: "True", Reason: "ValidMetricFound", Message: "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"},
			{Type: autoscalingv2.ScalingLimited, Status: "False", Reason: "DesiredWithinRange", Message: "the desired count is within the acceptable range"},
		}}
	fresh := &api.HorizontalPodAutoscaler{ObjectMeta: meta("shop", "api", 10*time.Second, nil)}
	fresh.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "api"},
		MaxReplicas:    5,
		Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu",
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(80))}}}},
	}
	return []api.Object{web, fresh}
}

// fixtureCRDs: a definition of widgets, as kubectl lists it.
func fixtureCRDs() []api.Object {
	crd := &api.CustomResourceDefinition{ObjectMeta: meta("", "widgets.example.com", 5*day, nil)}
	crd.Spec.Group = "example.com"
	crd.Spec.Scope = "Namespaced"
	crd.Spec.Names.Plural, crd.Spec.Names.Kind = "widgets", "Widget"
	return []api.Object{crd}
}

// fixtureNetworkPolicies: one for the web pods, one that selects every
// pod of its namespace.
func fixtureNetworkPolicies() []api.Object {
	web := &api.NetworkPolicy{ObjectMeta: meta("shop", "web-from-frontend", 3*day, nil)}
	web.Spec.PodSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	web.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
		{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "frontend"}}}}}}
	deny := &api.NetworkPolicy{ObjectMeta: meta("shop", "deny-all", time.Hour, nil)}
	return []api.Object{deny, web}
}
