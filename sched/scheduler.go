package sched

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
)

// The resource scoring strategies, named as in kube-scheduler's
// NodeResourcesFit arguments (scoringStrategy.type).
const (
	// LeastAllocated prefers the emptiest nodes, spreading pods (the
	// default).
	LeastAllocated = "LeastAllocated"
	// MostAllocated prefers the fullest nodes, packing pods.
	MostAllocated = "MostAllocated"
)

// ParseScoringStrategy turns a strategy's name into Options.MostAllocated.
func ParseScoringStrategy(name string) (mostAllocated bool, err error) {
	switch name {
	case LeastAllocated, "":
		return false, nil
	case MostAllocated:
		return true, nil
	}
	return false, fmt.Errorf("scoring strategy %q is not %s or %s", name, LeastAllocated, MostAllocated)
}

// Options configure a Scheduler. The zero value is usable.
type Options struct {
	// Clock drives back-off, the unschedulable sweep and condition
	// times; tests pass a fake one. Defaults to the real clock.
	Clock clock.WithTicker
	// Seed makes tie-breaking between equal nodes reproducible.
	Seed int64
	// MostAllocated packs pods onto the fullest nodes instead of
	// spreading them onto the emptiest.
	MostAllocated bool
	// Logger receives the scheduler's few log lines; defaults to
	// slog.Default().
	Logger *slog.Logger
	// Volumes is the volume node-affinity hook; nil constrains nothing.
	Volumes VolumeFilter
	// Events receives Scheduled and FailedScheduling; nil drops them.
	Events EventRecorder
	// BindBatch bounds how many writes share one store transaction
	// (default 512).
	BindBatch int
	// Binders is how many goroutines write to the store (default 2): one
	// prepares its next batch while another's transaction commits.
	Binders int
	// Informers, if set, feeds the scheduler from the process's shared
	// informers of the store; nil gives it informers of its own.
	Informers *informer.Factory
}

// Scheduler binds pending pods to nodes: it follows nodes and pods in the
// store, keeps the queue and the node cache, runs the framework for one
// pod at a time, and hands the results to the binder.
type Scheduler struct {
	store *store.Store
	// informers feed the cache and the queue; own says Run starts them.
	informers *informer.Factory
	own       bool
	opts      Options
	log       *slog.Logger
	events    EventRecorder
	// recording: someone listens to events, so they are worth formatting.
	recording bool
	fw        *Framework
	cache     *cache
	queue     *queue
	binder    *binder
	// volumes learns where pods are assumed; nil when the volume hook
	// does not care.
	volumes VolumeAssumer

	started atomic.Bool
	// gatedPods are the gated pods whose condition is to be written.
	gatedMu    sync.Mutex
	gatedPods  []*api.Pod
	gatedReady chan struct{}
	stats      struct{ attempts, bound, unschedulable, errors atomic.Uint64 }
	metrics    *metrics
}

// Stats count what the scheduler did, for tests, benchmarks and metrics.
type Stats struct {
	Attempts      uint64 // scheduling attempts
	Bound         uint64 // pods bound
	Unschedulable uint64 // attempts that found no node
	Errors        uint64 // attempts or bindings that failed otherwise
	// Pending pods in the queue: active, backing off, unschedulable, and
	// being scheduled or bound.
	Active, Backoff, Parked, InFlight int
}

var (
	nodeKind, _      = api.LookupResource("nodes")
	namespaceKind, _ = api.LookupResource("namespaces")
	budgetKind, _    = api.LookupResource("poddisruptionbudgets")
)

// New returns a Scheduler over s; Run starts it.
func New(s *store.Store, opts Options) *Scheduler {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	recording := opts.Events != nil
	if !recording {
		opts.Events = noEvents{}
	}
	if opts.BindBatch <= 0 {
		opts.BindBatch = 512
	}
	if opts.Binders <= 0 {
		opts.Binders = 2
	}
	sc := &Scheduler{
		store:     s,
		opts:      opts,
		log:       opts.Logger,
		events:    opts.Events,
		recording: recording,
		fw: NewFramework(FrameworkOptions{
			Seed:          opts.Seed,
			MostAllocated: opts.MostAllocated,
			Volumes:       opts.Volumes,
		}),
		cache:      newCache(),
		queue:      newQueue(opts.Clock),
		gatedReady: make(chan struct{}, 1),
	}
	if sc.informers = opts.Informers; sc.informers == nil {
		sc.informers, sc.own = informer.NewFactory(s, opts.Clock, opts.Logger), true
	}
	sc.volumes, _ = opts.Volumes.(VolumeAssumer)
	sc.metrics = newMetrics(sc)
	sc.binder = &binder{
		store:  s,
		clock:  opts.Clock,
		in:     make(chan *write, 4*opts.BindBatch),
		batch:  opts.BindBatch,
		report: sc.written,
	}
	return sc
}

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() Stats {
	st := Stats{
		Attempts:      s.stats.attempts.Load(),
		Bound:         s.stats.bound.Load(),
		Unschedulable: s.stats.unschedulable.Load(),
		Errors:        s.stats.errors.Load(),
	}
	st.Active, st.Backoff, st.Parked, st.InFlight = s.queue.counts()
	return st
}

// Run schedules until ctx ends, then stops every goroutine it started and
// returns nil; it returns an error if the store fails or closes. A
// Scheduler runs once.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("scheduler already running")
	}
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	remove, err := s.follow(cancel)
	if err != nil {
		return err
	}
	defer remove()
	if s.own {
		s.informers.Start(ctx)
		defer s.informers.Wait()
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.queue.run(ctx) })
	wg.Go(func() { s.writeGated(ctx) })
	for range s.opts.Binders {
		wg.Go(func() { s.binder.run(ctx) })
	}
	for {
		qp, pod, err := s.queue.pop(ctx)
		if err != nil {
			break
		}
		s.scheduleOne(ctx, qp, pod)
	}
	cancel(nil)
	wg.Wait()
	if parent.Err() != nil {
		return nil // the caller ended it, whatever its cause
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// scheduleOne makes one attempt for one pod.
func (s *Scheduler) scheduleOne(ctx context.Context, qp *queuedPod, pod *api.Pod) {
	if !ours(pod) {
		s.queue.done(qp)
		return
	}
	s.stats.attempts.Add(1)
	info := NewPodInfo(pod)
	res, err := s.cache.schedule(s.fw, info)
	var fitErr *FitError
	switch {
	case err == nil:
		if s.volumes != nil {
			s.volumes.AssumePodVolumes(pod, res.Node)
		}
		s.binder.submit(ctx, &write{qp: qp, info: info, pod: pod, node: res.Node})
	case errors.As(err, &fitErr):
		msg := fitErr.Error()
		s.metrics.observeAttempt(resultUnschedulable, qp.popped, s.opts.Clock.Now())
		nominate := res.Preemption.Node
		if nominate != "" {
			s.preempt(ctx, pod, res.Preemption)
		}
		s.queue.addUnschedulable(qp, nominate != "")
		s.events.Event(pod, EventTypeWarning, EventFailedScheduling, msg)
		w := &write{qp: qp, pod: pod, message: msg}
		if nominate != "" || pod.Status.NominatedNodeName != "" {
			w.nominate = &nominate
		}
		s.binder.submit(ctx, w)
		s.stats.unschedulable.Add(1)
	case errors.Is(err, errPlaced):
		s.queue.done(qp)
	default:
		s.stats.errors.Add(1)
		s.metrics.observeAttempt(resultError, qp.popped, s.opts.Clock.Now())
		s.log.Error("scheduling failed", "pod", qp.key, "err", err)
		s.queue.retry(qp)
	}
}

// written takes the outcome of a write: a binding confirms the assumed
// pod or gives it back to the queue.
func (s *Scheduler) written(w *write) {
	if w.node == "" {
		if w.err != nil && !errors.Is(w.err, errPodGone) {
			s.log.Debug("writing unschedulable condition failed", "pod", w.qp.key, "err", w.err)
		}
		return
	}
	switch {
	case w.err == nil:
		now := s.opts.Clock.Now()
		s.metrics.observeAttempt(resultScheduled, w.qp.popped, now)
		s.metrics.observeBound(w.qp.attempts, w.qp.added, now)
		s.cache.confirm(w.info)
		s.queue.done(w.qp)
		s.stats.bound.Add(1)
		if s.recording {
			s.events.Event(w.pod, EventTypeNormal, EventScheduled,
				fmt.Sprintf("Successfully assigned %s to %s", w.qp.key, w.node))
		}
	case errors.Is(w.err, errPodGone), errors.Is(w.err, errBoundElsewhere):
		s.forgetVolumes(w.pod)
		s.cache.forget(w.info)
		s.queue.done(w.qp)
		s.queue.moveAll() // the room it held is free again
	default:
		s.stats.errors.Add(1)
		s.metrics.observeAttempt(resultError, w.qp.popped, s.opts.Clock.Now())
		if refused(w.err) {
			// The store refused this binding (the pod changed under it, or
			// an admission check said no): expected under churn, told to
			// the user by the event, logged as kube-scheduler does, at a
			// verbosity.
			s.log.Debug("binding refused", "pod", w.qp.key, "node", w.node, "err", w.err)
		} else {
			s.log.Error("binding failed", "pod", w.qp.key, "node", w.node, "err", w.err)
		}
		s.events.Event(w.pod, EventTypeWarning, EventFailedScheduling, "Binding rejected: "+w.err.Error())
		s.forgetVolumes(w.pod)
		s.cache.forget(w.info)
		s.queue.retry(w.qp)
		s.queue.moveAll()
	}
}

// refused reports whether the store refused a write for what it holds
// (a conflict, an object gone, an admission check, an invalid object)
// rather than failed at it (closed, its backend broken).
func refused(err error) bool {
	return store.IsConflict(err) || store.IsNotFound(err) || store.IsAlreadyExists(err) ||
		store.IsForbidden(err) || errors.Is(err, store.ErrInvalid)
}

// forgetVolumes takes back the volume assumption of a pod whose binding
// failed.
func (s *Scheduler) forgetVolumes(pod *api.Pod) {
	if s.volumes != nil {
		s.volumes.ForgetPodVolumes(pod)
	}
}

// ours reports whether the scheduler should place the pod: pending, not
// being deleted or finished, asking for the default scheduler (an empty
// name is what api.Default makes the default), and without scheduling
// gates.
func ours(pod *api.Pod) bool {
	return pendingForUs(pod) && len(pod.Spec.SchedulingGates) == 0
}

// pendingForUs is ours before the scheduling gates: such a pod that has
// gates waits for them with a SchedulingGated condition.
func pendingForUs(pod *api.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil &&
		pod.Status.Phase != api.PodSucceeded && pod.Status.Phase != api.PodFailed &&
		(pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == api.DefaultSchedulerName)
}

// SchedulingGatedMessage is the message of the PodScheduled condition of
// a pod held back by its scheduling gates, Kubernetes' words.
const SchedulingGatedMessage = "Scheduling is blocked due to non-empty scheduling gates"

// gated has the SchedulingGated condition written for a pending pod with
// scheduling gates, unless it has it already. The watch handlers call it,
// so it only notes the pod; writeGated hands it to the binder.
func (s *Scheduler) gated(pod *api.Pod) {
	if saysUnschedulable(pod, api.PodReasonSchedulingGated, SchedulingGatedMessage) {
		return
	}
	s.gatedMu.Lock()
	s.gatedPods = append(s.gatedPods, pod)
	s.gatedMu.Unlock()
	signal(s.gatedReady)
}

// writeGated submits the noted gated pods' conditions until ctx ends.
func (s *Scheduler) writeGated(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.gatedReady:
		}
		s.gatedMu.Lock()
		pods := s.gatedPods
		s.gatedPods = nil
		s.gatedMu.Unlock()
		for _, pod := range pods {
			key := pod.Namespace + "/" + pod.Name
			w := &write{qp: &queuedPod{key: key, pod: pod}, pod: pod,
				reason: api.PodReasonSchedulingGated, message: SchedulingGatedMessage}
			if !s.binder.submit(ctx, w) {
				return
			}
		}
	}
}

// EventPreempted is the reason of the event on a pod the scheduler
// preempts.
const EventPreempted = "Preempted"

// preempt makes the room p found for pod: each victim gets a
// DisruptionTarget condition, as Kubernetes marks it, and is deleted
// with its grace period, in one transaction. A victim gone or already
// being deleted is left alone.
func (s *Scheduler) preempt(ctx context.Context, pod *api.Pod, p Preemption) {
	now := metav1.NewTime(s.opts.Clock.Now())
	var deleted []*api.Pod
	_, err := s.store.Txn(ctx, func(tx *store.Txn) error {
		deleted = deleted[:0]
		for _, v := range p.Victims {
			obj, err := tx.Get(podKind, v.Namespace, v.Name)
			if store.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			cur := obj.(*api.Pod)
			if string(cur.UID) != v.UID || cur.DeletionTimestamp != nil {
				continue
			}
			out := copyForWrite(cur)
			out.Status.Conditions = withCondition(cur.Status.Conditions, api.PodCondition{
				Type: api.PodDisruptionTarget, Status: api.ConditionTrue,
				Reason: api.PodReasonPreemptionByScheduler, Message: DisruptionTargetMessage,
			}, now)
			if _, err := tx.Update(out); err != nil {
				return err
			}
			if _, err := tx.Delete(podKind, v.Namespace, v.Name, store.DeleteOptions{Preconditions: &store.Preconditions{UID: v.UID}}); err != nil {
				return err
			}
			deleted = append(deleted, cur)
		}
		return nil
	})
	if err != nil {
		s.log.Error("preemption failed", "pod", pod.Namespace+"/"+pod.Name, "node", p.Node, "err", err)
		return
	}
	for _, v := range deleted {
		s.events.Event(v, EventTypeNormal, EventPreempted, preemptedMessage(pod, p.Node))
	}
}
