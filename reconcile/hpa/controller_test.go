package hpa

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// usageTable is a metrics source the test sets: each pod's cpu in
// millicores, sampled now.
type usageTable struct {
	mu    sync.Mutex
	clock *clocktesting.FakeClock
	cpu   map[string]int64
}

func (u *usageTable) PodUsage(_ context.Context, _ string, _ labels.Selector) (map[string]PodUsage, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]PodUsage{}
	for name, m := range u.cpu {
		out[name] = PodUsage{Timestamp: u.clock.Now(), Window: 10 * time.Second,
			Containers: map[string]api.ResourceList{"app": {api.ResourceCPU: *resource.NewMilliQuantity(m, resource.DecimalSI)}}}
	}
	return out, nil
}

func (u *usageTable) set(cpu map[string]int64) {
	u.mu.Lock()
	u.cpu = cpu
	u.mu.Unlock()
}

type recorded struct {
	mu     sync.Mutex
	events []string
}

func (r *recorded) Event(_ api.Object, typ, reason, msg string) {
	r.mu.Lock()
	r.events = append(r.events, typ+" "+reason+" "+msg)
	r.mu.Unlock()
}

type env struct {
	t      *testing.T
	store  *store.Store
	clock  *clocktesting.FakeClock
	usage  *usageTable
	events *recorded
	r      *Reconciler
}

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T) *env {
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	clk := clocktesting.NewFakeClock(start)
	e := &env{t: t, store: s, clock: clk, usage: &usageTable{clock: clk}, events: &recorded{}}
	e.r = NewReconciler(s, clk, Options{Metrics: e.usage, Events: e.events})
	return e
}

func (e *env) create(obj api.Object) {
	e.t.Helper()
	api.Default(obj)
	if errs := api.Validate(obj); len(errs) > 0 {
		e.t.Fatal(errs)
	}
	if _, err := e.store.Create(context.Background(), obj); err != nil {
		e.t.Fatal(err)
	}
}

// deployment makes web with n replicas and n running, ready pods of
// 100m cpu each, started long ago.
func (e *env) deployment(n int32) {
	d := &api.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: api.DeploymentSpec{
		Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: api.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: api.PodSpec{Containers: []api.Container{{Name: "app", Image: "x"}}}},
	}}
	e.create(d)
	e.pods(0, n)
}

func (e *env) pods(from, to int32) {
	for i := from; i < to; i++ {
		started := metav1.NewTime(start.Add(-time.Hour))
		p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("web-%d", i), Labels: map[string]string{"app": "web"}},
			Spec: api.PodSpec{Containers: []api.Container{{Name: "app", Image: "x",
				Resources: api.ResourceRequirements{Requests: api.ResourceList{api.ResourceCPU: resource.MustParse("100m")}}}}},
			Status: api.PodStatus{Phase: api.PodRunning, StartTime: &started,
				Conditions: []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue, LastTransitionTime: started}}}}
		e.create(p)
	}
}

func (e *env) hpa(behavior *autoscalingv2.HorizontalPodAutoscalerBehavior) {
	h := &api.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MaxReplicas:    10,
		Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(50))}}}},
		Behavior: behavior,
	}}
	e.create(h)
}

func ptr[T any](v T) *T { return &v }

func (e *env) sync() *api.HorizontalPodAutoscaler {
	e.t.Helper()
	if _, err := e.r.Reconcile(context.Background(), "default/web"); err != nil {
		e.t.Fatal(err)
	}
	obj, err := e.store.Get(hpaKind, "default", "web")
	if err != nil {
		e.t.Fatal(err)
	}
	return obj.(*api.HorizontalPodAutoscaler)
}

func (e *env) replicas() int32 {
	e.t.Helper()
	obj, err := e.store.Get(api.MustLookupResource("deployments"), "default", "web")
	if err != nil {
		e.t.Fatal(err)
	}
	return *obj.(*api.Deployment).Spec.Replicas
}

func condition(h *api.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) string {
	for _, c := range h.Status.Conditions {
		if c.Type == t {
			return string(c.Status) + " " + c.Reason
		}
	}
	return "none"
}

// TestScaleUpAndStabilizedDown: pods at 100% of a 50% target double; when the load goes, the scale down waits for the five-minute
// window, on the fake clock, then goes to the recommendation.
func TestScaleUpAndStabilizedDown(t *testing.T) {
	e := newEnv(t)
	e.deployment(2)
	e.hpa(nil)
	e.usage.set(map[string]int64{"web-0": 100, "web-1": 100})
	h := e.sync()
	if got := e.replicas(); got != 4 {
		t.Fatalf("replicas %d, want 4", got)
	}
	if c := condition(h, autoscalingv2.ScalingLimited); c != "False DesiredWithinRange" {
		t.Errorf("ScalingLimited %s", c)
	}
	if c := condition(h, autoscalingv2.AbleToScale); c != "True SucceededRescale" {
		t.Errorf("AbleToScale %s", c)
	}
	if c := condition(h, autoscalingv2.ScalingActive); c != "True ValidMetricFound" {
		t.Errorf("ScalingActive %s", c)
	}
	if u := h.Status.CurrentMetrics[0].Resource.Current.AverageUtilization; u == nil || *u != 100 {
		t.Errorf("current metrics %+v", h.Status.CurrentMetrics)
	}
	if h.Status.LastScaleTime == nil || !h.Status.LastScaleTime.Time.Equal(start) {
		t.Errorf("lastScaleTime %v", h.Status.LastScaleTime)
	}
	if !strings.Contains(strings.Join(e.events.events, "\n"), "Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target") {
		t.Errorf("events %q", e.events.events)
	}

	e.pods(2, 4)
	low := map[string]int64{}
	for i := range 4 {
		low[fmt.Sprintf("web-%d", i)] = 10
	}
	e.usage.set(low)
	// Within the sync period nothing is looked at.
	e.clock.Step(5 * time.Second)
	if res, err := e.r.Reconcile(context.Background(), "default/web"); err != nil || res.RequeueAfter != 10*time.Second {
		t.Fatalf("early sync: %+v %v", res, err)
	}
	for range 19 { // 19 × 15s: inside the window
		e.clock.Step(15 * time.Second)
		h = e.sync()
		if got := e.replicas(); got != 4 {
			t.Fatalf("at %v replicas %d, want 4 held by the window", e.clock.Since(start), got)
		}
	}
	if c := condition(h, autoscalingv2.AbleToScale); c != "True ScaleDownStabilized" {
		t.Errorf("AbleToScale %s inside the window", c)
	}
	e.clock.Step(30 * time.Second)
	e.sync()
	if got := e.replicas(); got != 1 {
		t.Fatalf("replicas %d after the window, want 1 (ceil(10%%/50%% of 4))", got)
	}
}

// TestBehaviorPolicies bounds a scale up by the policy: one pod per
// minute.
func TestBehaviorPolicies(t *testing.T) {
	e := newEnv(t)
	e.deployment(2)
	e.hpa(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}}})
	e.usage.set(map[string]int64{"web-0": 200, "web-1": 200})
	h := e.sync()
	if got := e.replicas(); got != 3 {
		t.Fatalf("replicas %d, want 3 (one pod a minute)", got)
	}
	if c := condition(h, autoscalingv2.ScalingLimited); c != "True ScaleUpLimit" {
		t.Errorf("ScalingLimited %s", c)
	}
	e.pods(2, 3)
	e.usage.set(map[string]int64{"web-0": 200, "web-1": 200, "web-2": 200})
	e.clock.Step(15 * time.Second)
	e.sync()
	if got := e.replicas(); got != 3 {
		t.Fatalf("replicas %d within the policy's minute, want 3", got)
	}
	e.clock.Step(50 * time.Second)
	e.sync()
	if got := e.replicas(); got != 4 {
		t.Fatalf("replicas %d after the minute, want 4", got)
	}
}

// TestNoMetrics: without usage the autoscaler says why, and scales
// nothing.
func TestNoMetrics(t *testing.T) {
	e := newEnv(t)
	e.deployment(2)
	e.hpa(nil)
	h := e.sync()
	if c := condition(h, autoscalingv2.ScalingActive); c != "False FailedGetResourceMetric" {
		t.Errorf("ScalingActive %s", c)
	}
	want := "the HPA was unable to compute the replica count: failed to get cpu resource metric value: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API"
	for _, c := range h.Status.Conditions {
		if c.Type == autoscalingv2.ScalingActive && c.Message != want {
			t.Errorf("message %q\nwant %q", c.Message, want)
		}
	}
	if got := e.replicas(); got != 2 {
		t.Errorf("replicas %d", got)
	}
	if !strings.Contains(strings.Join(e.events.events, "\n"), "Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1)") {
		t.Errorf("events %q", e.events.events)
	}
}

// TestMissingTarget: a target that does not exist is AbleToScale False.
func TestMissingTarget(t *testing.T) {
	e := newEnv(t)
	e.hpa(nil)
	h := e.sync()
	if c := condition(h, autoscalingv2.AbleToScale); c != "False FailedGetScale" {
		t.Errorf("AbleToScale %s", c)
	}
	if !strings.Contains(h.Status.Conditions[0].Message, `deployments.apps "web" not found`) {
		t.Errorf("message %q", h.Status.Conditions[0].Message)
	}
}

// TestMinAndMax: a target below min or above max is brought inside.
func TestMinAndMax(t *testing.T) {
	e := newEnv(t)
	e.deployment(12)
	e.hpa(nil)
	e.sync()
	if got := e.replicas(); got != 10 {
		t.Fatalf("replicas %d, want max 10", got)
	}
}
