package hpa

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "horizontal-pod-autoscaler"

// EventComponent is the source of the controller's events, as Kubernetes
// names it.
const EventComponent = "horizontal-pod-autoscaler"

// Reasons of the controller's events and conditions, as Kubernetes gives
// them.
const (
	ReasonSuccessfulRescale      = "SuccessfulRescale"
	ReasonFailedRescale          = "FailedRescale"
	ReasonFailedGetScale         = "FailedGetScale"
	ReasonSucceededGetScale      = "SucceededGetScale"
	ReasonSucceededRescale       = "SucceededRescale"
	ReasonFailedUpdateScale      = "FailedUpdateScale"
	ReasonFailedComputeReplicas  = "FailedComputeMetricsReplicas"
	ReasonFailedGetResource      = "FailedGetResourceMetric"
	ReasonFailedGetContainer     = "FailedGetContainerResourceMetric"
	ReasonValidMetricFound       = "ValidMetricFound"
	ReasonScalingDisabled        = "ScalingDisabled"
	ReasonInvalidSelector        = "InvalidSelector"
	ReasonSelectorRequired       = "SelectorRequired"
	ReasonInvalidMetricSourceTyp = "InvalidMetricSourceType"
)

// Kubernetes' defaults for kube-controller-manager's HPA flags.
const (
	DefaultSyncPeriod              = 15 * time.Second
	DefaultTolerance               = 0.1
	DefaultCPUInitializationPeriod = 5 * time.Minute
	DefaultInitialReadinessDelay   = 30 * time.Second
)

var hpaKind = api.MustLookupResource("horizontalpodautoscalers")

// MetricsSource gives the resource usage of the pods a selector picks in
// a namespace, by pod name: what metrics.k8s.io serves.
type MetricsSource interface {
	PodUsage(ctx context.Context, namespace string, sel labels.Selector) (map[string]PodUsage, error)
}

// Options configure the controller; zero values are Kubernetes' defaults.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
	Events  reconcile.EventRecorder
	// Metrics is where pod usage is read; nil reads none, and every
	// resource metric then fails as it does without metrics-server.
	Metrics MetricsSource
	// SyncPeriod is how often each autoscaler is looked at.
	SyncPeriod time.Duration
	// Tolerance is how far from its target a ratio may be and change
	// nothing.
	Tolerance float64
	// DownscaleStabilization is the scale-down window of an autoscaler
	// that sets none.
	DownscaleStabilization time.Duration
	// CPUInitializationPeriod and InitialReadinessDelay decide which
	// new pods' CPU samples are left out, as Kubernetes' flags of those
	// names.
	CPUInitializationPeriod time.Duration
	InitialReadinessDelay   time.Duration
}

// NewController returns the HorizontalPodAutoscaler controller, fed by a
// watch on autoscalers; each is looked at again every SyncPeriod.
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	var c clock.PassiveClock
	if opts.Clock != nil {
		c = opts.Clock
	}
	r := NewReconciler(s, c, opts)
	return reconcile.NewController(Name, r, reconcile.Options{
		Clock:   opts.Clock,
		Backoff: opts.Backoff,
		Logger:  opts.Logger,
		Store:   s,
		Watches: []reconcile.Watch{{Kind: hpaKind}},
	})
}

// Reconciler converges one autoscaler, named by its key.
type Reconciler struct {
	store   *store.Store
	clock   clock.PassiveClock
	events  reconcile.EventRecorder
	metrics MetricsSource
	opts    Options

	mu      sync.Mutex
	history map[string]*history
	synced  map[string]syncMark
}

// syncMark is when an autoscaler was last looked at, and at which
// generation: a watch event in between (its own status write among
// them) waits for the period, as Kubernetes' queue makes it wait.
type syncMark struct {
	at         time.Time
	generation int64
}

// NewReconciler returns the Reconciler alone, for tests. A nil clock is
// the real one.
func NewReconciler(s *store.Store, c clock.PassiveClock, opts Options) *Reconciler {
	if c == nil {
		c = clock.RealClock{}
	}
	if opts.SyncPeriod <= 0 {
		opts.SyncPeriod = DefaultSyncPeriod
	}
	if opts.Tolerance <= 0 {
		opts.Tolerance = DefaultTolerance
	}
	if opts.DownscaleStabilization <= 0 {
		opts.DownscaleStabilization = api.DefaultHPAScaleDownStabilization * time.Second
	}
	if opts.CPUInitializationPeriod <= 0 {
		opts.CPUInitializationPeriod = DefaultCPUInitializationPeriod
	}
	if opts.InitialReadinessDelay <= 0 {
		opts.InitialReadinessDelay = DefaultInitialReadinessDelay
	}
	r := &Reconciler{store: s, clock: c, events: opts.Events, metrics: opts.Metrics, opts: opts,
		history: map[string]*history{}, synced: map[string]syncMark{}}
	if r.events == nil {
		r.events = reconcile.NoEvents{}
	}
	return r
}

// Reconcile looks at the autoscaler named key once per sync period (at
// once when its spec changed): it reads its target's scale, computes the
// replicas its metrics ask for, bounds them by its behaviour, min and
// max, scales the target and writes what it saw and did to its status.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := reconcile.SplitKey(key)
	obj, err := r.store.Get(hpaKind, ns, name)
	if store.IsNotFound(err) {
		r.mu.Lock()
		delete(r.history, key)
		delete(r.synced, key)
		r.mu.Unlock()
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get autoscaler %s: %w", key, err)
	}
	old := obj.(*api.HorizontalPodAutoscaler)
	now := r.clock.Now()
	r.mu.Lock()
	mark, seen := r.synced[key]
	h := r.history[key]
	if h == nil {
		h = &history{}
		r.history[key] = h
	}
	r.mu.Unlock()
	if seen && mark.generation == old.Generation {
		if wait := mark.at.Add(r.opts.SyncPeriod).Sub(now); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	hpa := old.DeepCopy()
	if err := r.sync(ctx, hpa, h, now); err != nil {
		return reconcile.Result{}, err
	}
	if !equality.Semantic.DeepEqual(old.Status, hpa.Status) {
		if _, err := r.store.Update(ctx, hpa); err != nil {
			return reconcile.Result{}, fmt.Errorf("update autoscaler %s status: %w", key, err)
		}
	}
	r.mu.Lock()
	r.synced[key] = syncMark{at: now, generation: old.Generation}
	r.mu.Unlock()
	return reconcile.Result{RequeueAfter: r.opts.SyncPeriod}, nil
}

// sync is one pass of Kubernetes' reconcileAutoscaler over hpa, whose
// status it sets; an error is a write that should be tried again.
func (r *Reconciler) sync(ctx context.Context, hpa *api.HorizontalPodAutoscaler, h *history, now time.Time) error {
	gen := hpa.Generation
	hpa.Status.ObservedGeneration = &gen
	target, err := r.target(hpa)
	if err != nil {
		r.events.Event(hpa, api.EventTypeWarning, ReasonFailedGetScale, err.Error())
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, ReasonFailedGetScale, now,
			"the HPA controller was unable to get the target's current scale: %v", err)
		return nil
	}
	setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, ReasonSucceededGetScale, now,
		"the HPA controller was able to get the target's current scale")
	replicasPtr, _ := api.ReplicasField(target)
	current := int32(1)
	if *replicasPtr != nil {
		current = **replicasPtr
	}
	minR := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minR = *hpa.Spec.MinReplicas
	}
	desired, rescale, reason := int32(0), true, ""
	var statuses []autoscalingv2.MetricStatus
	switch {
	case current == 0 && minR != 0:
		rescale = false
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, ReasonScalingDisabled, now,
			"scaling is disabled since the replica count of the target is zero")
	case current > hpa.Spec.MaxReplicas:
		reason, desired = "Current number of replicas above Spec.MaxReplicas", hpa.Spec.MaxReplicas
	case current < minR:
		reason, desired = "Current number of replicas below Spec.MinReplicas", minR
	default:
		var metricName string
		var proposal int32
		proposal, metricName, statuses, err = r.replicasForMetrics(ctx, hpa, target, current, now)
		if err != nil && proposal == -1 {
			hpa.Status.CurrentReplicas, hpa.Status.CurrentMetrics = current, statuses
			r.events.Event(hpa, api.EventTypeWarning, ReasonFailedComputeReplicas, err.Error())
			return nil
		}
		desired = proposal
		if desired > current {
			reason = metricName + " above target"
		}
		if desired < current {
			reason = "All metrics below target"
		}
		var v verdict
		if hpa.Spec.Behavior == nil {
			v = h.normalize(now, r.opts.DownscaleStabilization, current, desired, minR, hpa.Spec.MaxReplicas)
		} else {
			v = h.normalizeWithBehavior(now, hpa.Spec.Behavior, r.opts.DownscaleStabilization, current, desired, minR, hpa.Spec.MaxReplicas)
		}
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, v.ableReason, now, "%s", v.ableMessage)
		limited := corev1.ConditionFalse
		if v.limited {
			limited = corev1.ConditionTrue
		}
		setCondition(hpa, autoscalingv2.ScalingLimited, limited, v.limitedReason, now, "%s", v.limitedMessage)
		desired = v.replicas
		rescale = desired != current
	}
	if rescale {
		next := target.DeepCopyObject().(api.Object)
		p, _ := api.ReplicasField(next)
		n := desired
		*p = &n
		if _, err := r.store.Update(ctx, next); err != nil {
			r.events.Event(hpa, api.EventTypeWarning, ReasonFailedRescale, fmt.Sprintf("New size: %d; reason: %s; error: %v", desired, reason, err))
			setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, ReasonFailedUpdateScale, now,
				"the HPA controller was unable to update the target scale: %v", err)
			hpa.Status.CurrentReplicas, hpa.Status.CurrentMetrics = current, statuses
			if store.IsConflict(err) {
				return err
			}
			return nil
		}
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, ReasonSucceededRescale, now,
			"the HPA controller was able to update the target scale to %d", desired)
		r.events.Event(hpa, api.EventTypeNormal, ReasonSuccessfulRescale, fmt.Sprintf("New size: %d; reason: %s", desired, reason))
		h.record(now, hpa.Spec.Behavior, current, desired)
		t := metav1.NewTime(now)
		hpa.Status.LastScaleTime = &t
	} else {
		desired = current
	}
	hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas, hpa.Status.CurrentMetrics = current, desired, statuses
	return nil
}

// target reads the autoscaler's scale target from the store.
func (r *Reconciler) target(hpa *api.HorizontalPodAutoscaler) (api.Object, error) {
	ref := hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("invalid API version in scale target reference: %v", err)
	}
	k, ok := api.KindFor(gv.WithKind(ref.Kind))
	if !ok || !api.Scalable(k) {
		return nil, fmt.Errorf("unable to determine resource for scale target reference: no matches for kind %q in group %q", ref.Kind, gv.Group)
	}
	obj, err := r.store.Get(k, hpa.Namespace, ref.Name)
	if store.IsNotFound(err) {
		return nil, fmt.Errorf("%s %q not found", k.GroupResource(), ref.Name)
	}
	return obj, err
}

// replicasForMetrics is Kubernetes' computeReplicasForMetrics: the most
// replicas any valid metric asks for, with a status per metric; -1 when
// every metric failed, or some did and the others would scale down.
func (r *Reconciler) replicasForMetrics(ctx context.Context, hpa *api.HorizontalPodAutoscaler, target api.Object, current int32, now time.Time) (int32, string, []autoscalingv2.MetricStatus, error) {
	_, selStr := api.ScaleStatus(target)
	if selStr == "" {
		err := errors.New("selector is required")
		r.events.Event(hpa, api.EventTypeWarning, ReasonSelectorRequired, err.Error())
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, ReasonInvalidSelector, now, "the HPA target's scale is missing a selector")
		return -1, "", nil, err
	}
	sel, err := labels.Parse(selStr)
	if err != nil {
		err = fmt.Errorf("couldn't convert selector into a corresponding internal selector object: %v", err)
		r.events.Event(hpa, api.EventTypeWarning, ReasonInvalidSelector, err.Error())
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, ReasonInvalidSelector, now, "%s", err.Error())
		return -1, "", nil, err
	}
	objs, _, err := r.store.List(api.KindOf(&api.Pod{}), store.Filter{Namespace: hpa.Namespace, Labels: sel})
	if err != nil {
		return -1, "", nil, fmt.Errorf("list pods: %w", err)
	}
	pods := make([]*api.Pod, len(objs))
	for i, o := range objs {
		pods[i] = o.(*api.Pod)
	}
	var usage map[string]PodUsage
	var usageErr error
	if r.metrics == nil {
		usageErr = errors.New("no metrics returned from resource metrics API")
	} else if usage, usageErr = r.metrics.PodUsage(ctx, hpa.Namespace, sel); usageErr == nil && len(usage) == 0 {
		usageErr = errors.New("no metrics returned from resource metrics API")
	}
	calc := calculator{cpuInitializationPeriod: r.opts.CPUInitializationPeriod, initialReadinessDelay: r.opts.InitialReadinessDelay, now: now}
	tol := r.tolerances(hpa)

	statuses := make([]autoscalingv2.MetricStatus, len(hpa.Spec.Metrics))
	var replicas int32
	var metric string
	invalid := 0
	var firstErr error
	var firstReason, firstMessage string
	for i, spec := range hpa.Spec.Metrics {
		proposal, name, reason, err := r.replicasForMetric(calc, tol, spec, current, pods, usage, usageErr, &statuses[i])
		if err != nil {
			r.events.Event(hpa, api.EventTypeWarning, reason, err.Error())
			if invalid == 0 {
				firstErr, firstReason = err, reason
				firstMessage = fmt.Sprintf("the HPA was unable to compute the replica count: %v", err)
			}
			invalid++
			continue
		}
		if replicas == 0 || proposal > replicas {
			replicas, metric = proposal, name
		}
	}
	if invalid > 0 {
		firstErr = fmt.Errorf("invalid metrics (%d invalid out of %d), first error is: %v", invalid, len(hpa.Spec.Metrics), firstErr)
	}
	if invalid >= len(hpa.Spec.Metrics) || (invalid > 0 && replicas < current) {
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, firstReason, now, "%s", firstMessage)
		return -1, "", statuses, firstErr
	}
	setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionTrue, ReasonValidMetricFound, now,
		"the HPA was able to successfully calculate a replica count from %s", metric)
	return replicas, metric, statuses, nil
}

// tolerances are the autoscaler's behaviour's, else the controller's.
func (r *Reconciler) tolerances(hpa *api.HorizontalPodAutoscaler) tolerances {
	t := tolerances{down: r.opts.Tolerance, up: r.opts.Tolerance}
	if b := hpa.Spec.Behavior; b != nil {
		if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
			t.down = b.ScaleDown.Tolerance.AsApproximateFloat64()
		}
		if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
			t.up = b.ScaleUp.Tolerance.AsApproximateFloat64()
		}
	}
	return t
}

// replicasForMetric computes one metric's proposal and fills its status;
// an error comes with the reason of its event and condition.
func (r *Reconciler) replicasForMetric(calc calculator, tol tolerances, spec autoscalingv2.MetricSpec, current int32, pods []*api.Pod,
	usage map[string]PodUsage, usageErr error, status *autoscalingv2.MetricStatus) (int32, string, string, error) {
	var res corev1.ResourceName
	var container string
	var t autoscalingv2.MetricTarget
	reason := ReasonFailedGetResource
	kind := "resource"
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		res, t = spec.Resource.Name, spec.Resource.Target
	case autoscalingv2.ContainerResourceMetricSourceType:
		res, t, container = spec.ContainerResource.Name, spec.ContainerResource.Target, spec.ContainerResource.Container
		reason, kind = ReasonFailedGetContainer, "container resource"
	case autoscalingv2.PodsMetricSourceType, autoscalingv2.ObjectMetricSourceType, autoscalingv2.ExternalMetricSourceType:
		return 0, "", "FailedGet" + string(spec.Type) + "Metric",
			fmt.Errorf("failed to get %s metric: berth serves the resource metrics (cpu, memory) alone, no custom or external metrics API", spec.Type)
	default:
		return 0, "", ReasonInvalidMetricSourceTyp, fmt.Errorf("unknown metric source type %q", spec.Type)
	}
	name := api.ResourceName(res)
	wrap := func(what string, err error) error {
		return fmt.Errorf("failed to get %s %s metric value: failed to get %s %s: %v", res, kind, res, what, err)
	}
	if usageErr != nil {
		what := "usage"
		if t.AverageUtilization != nil {
			what = "utilization"
		}
		return 0, "", reason, wrap(what, fmt.Errorf("unable to get metrics for resource %s: %v", res, usageErr))
	}
	if t.AverageUtilization != nil {
		n, util, raw, err := calc.resourceReplicas(current, *t.AverageUtilization, name, container, pods, usage, tol)
		if err != nil {
			return 0, "", reason, wrap("utilization", err)
		}
		cur := autoscalingv2.MetricValueStatus{AverageUtilization: &util, AverageValue: resource.NewMilliQuantity(raw, resource.DecimalSI)}
		fillStatus(status, spec, cur)
		return n, fmt.Sprintf("%s %s utilization (percentage of request)", res, kind), "", nil
	}
	if t.AverageValue == nil {
		return 0, "", reason, wrap("usage", errors.New("no target value"))
	}
	n, avg, err := calc.valueReplicas(current, t.AverageValue.MilliValue(), name, container, pods, usage, tol)
	if err != nil {
		return 0, "", reason, wrap("usage", err)
	}
	fillStatus(status, spec, autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(avg, resource.DecimalSI)})
	return n, fmt.Sprintf("%s %s", res, kind), "", nil
}

func fillStatus(status *autoscalingv2.MetricStatus, spec autoscalingv2.MetricSpec, cur autoscalingv2.MetricValueStatus) {
	status.Type = spec.Type
	if spec.Resource != nil {
		status.Resource = &autoscalingv2.ResourceMetricStatus{Name: spec.Resource.Name, Current: cur}
	} else {
		status.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: spec.ContainerResource.Name, Container: spec.ContainerResource.Container, Current: cur}
	}
}

// setCondition sets a condition, its transition time moving only when
// its status does.
func setCondition(hpa *api.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason string, now time.Time, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for i := range hpa.Status.Conditions {
		c := &hpa.Status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		return
	}
	hpa.Status.Conditions = append(hpa.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
		Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(now),
	})
}
