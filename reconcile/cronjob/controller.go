package cronjob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Name is the controller's name in logs.
const Name = "cronjob"

// EventComponent is the source of the controller's events, as Kubernetes
// names it.
const EventComponent = "cronjob-controller"

// Reasons of the controller's events, as Kubernetes gives them.
const (
	ReasonSuccessfulCreate    = "SuccessfulCreate"
	ReasonSuccessfulDelete    = "SuccessfulDelete"
	ReasonFailedCreate        = "FailedCreate"
	ReasonSawCompletedJob     = "SawCompletedJob"
	ReasonMissingJob          = "MissingJob"
	ReasonJobAlreadyActive    = "JobAlreadyActive"
	ReasonTooManyMissedTimes  = "TooManyMissedTimes"
	ReasonMissSchedule        = "MissSchedule"
	ReasonUnparseableSchedule = "UnparseableSchedule"
	ReasonUnknownTimeZone     = "UnknownTimeZone"
)

var (
	cronJobKind = api.MustLookupResource("cronjobs")
	jobKind     = api.MustLookupResource("jobs")
)

// Options configure the controller; the zero value is usable.
type Options struct {
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
	// Events receives what the controller does; nil records nothing.
	Events reconcile.EventRecorder
}

// NewController returns the CronJob controller, fed by watches on
// CronJobs and Jobs. Run it with Controller.Run(ctx, workers).
func NewController(s *store.Store, opts Options) *reconcile.Controller {
	var c clock.PassiveClock
	if opts.Clock != nil {
		c = opts.Clock
	}
	r := NewReconciler(s, c)
	if opts.Events != nil {
		r.events = opts.Events
	}
	return reconcile.NewController(Name, r, reconcile.Options{
		Clock:   opts.Clock,
		Backoff: opts.Backoff,
		Logger:  opts.Logger,
		Store:   s,
		Watches: r.Watches(),
	})
}

// Reconciler converges one CronJob, named by its key.
type Reconciler struct {
	store  *store.Store
	clock  clock.PassiveClock
	events reconcile.EventRecorder
}

// NewReconciler returns the Reconciler alone, for tests and for callers
// that run it under their own Controller. A nil clock is the real one.
func NewReconciler(s *store.Store, c clock.PassiveClock) *Reconciler {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Reconciler{store: s, clock: c, events: reconcile.NoEvents{}}
}

// Watches are CronJobs, and Jobs, which concern the CronJob that
// controls them.
func (r *Reconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{Kind: cronJobKind},
		{Kind: jobKind, Keys: func(e store.Event) []string {
			ref := api.ControllerOf(e.Object)
			if ref == nil || ref.Kind != cronJobKind.GVK.Kind {
				return nil
			}
			return []string{reconcile.Key(e.Object.GetNamespace(), ref.Name)}
		}},
	}
}

// Reconcile converges the CronJob named key: it follows its Jobs into
// its status, makes the Job of a time that is due, trims its history,
// and looks again at the next time of the schedule.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := reconcile.SplitKey(key)
	obj, err := r.store.Get(cronJobKind, ns, name)
	if store.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get cronjob %s: %w", key, err)
	}
	old := obj.(*api.CronJob)
	cj := old.DeepCopy()
	listed, _, err := r.store.List(jobKind, store.Filter{Namespace: ns, Index: store.IndexOwner, Value: string(cj.UID)})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("list jobs of cronjob %s: %w", key, err)
	}
	var jobs []*api.Job
	for _, o := range listed {
		if ref := api.ControllerOf(o); ref != nil && ref.UID == cj.UID {
			jobs = append(jobs, o.(*api.Job))
		}
	}
	now := r.clock.Now()
	r.follow(cj, jobs)
	var wait time.Duration
	var errs []error
	if cj.DeletionTimestamp == nil {
		var created *api.Job
		created, wait, err = r.run(ctx, cj, jobs, now)
		if err != nil {
			errs = append(errs, err)
		}
		if created != nil {
			jobs = append(jobs, created)
		}
	}
	if !equality.Semantic.DeepEqual(old.Status, cj.Status) {
		if _, err := r.store.Update(ctx, cj); err != nil {
			errs = append(errs, fmt.Errorf("update status of cronjob %s: %w", key, err))
		}
	}
	if cj.DeletionTimestamp == nil {
		errs = append(errs, r.trim(ctx, cj, jobs)...)
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// follow brings the status's active Jobs up to date with the Jobs the
// CronJob controls: a running one is active, a finished one is not (and a
// completion moves lastSuccessfulTime), one gone is dropped.
func (r *Reconciler) follow(cj *api.CronJob, jobs []*api.Job) {
	st := &cj.Status
	byName := map[string]*api.Job{}
	for _, j := range jobs {
		byName[j.Name] = j
		c := api.JobFinished(j)
		if c == nil {
			if !slices.ContainsFunc(st.Active, func(ref api.ObjectReference) bool { return ref.UID == string(j.UID) }) {
				st.Active = append(st.Active, jobRef(j))
			}
			continue
		}
		if slices.ContainsFunc(st.Active, func(ref api.ObjectReference) bool { return ref.UID == string(j.UID) }) {
			r.events.Event(cj, api.EventTypeNormal, ReasonSawCompletedJob,
				fmt.Sprintf("Saw completed job: %s, condition: %s", j.Name, c.Type))
		}
		if c.Type == api.JobComplete && j.Status.CompletionTime != nil &&
			(st.LastSuccessfulTime == nil || st.LastSuccessfulTime.Before(j.Status.CompletionTime)) {
			t := *j.Status.CompletionTime
			st.LastSuccessfulTime = &t
		}
	}
	st.Active = slices.DeleteFunc(st.Active, func(ref api.ObjectReference) bool {
		j, ok := byName[ref.Name]
		if !ok || string(j.UID) != ref.UID {
			r.events.Event(cj, api.EventTypeNormal, ReasonMissingJob, "Active job went missing: "+ref.Name)
			return true
		}
		return api.JobFinished(j) != nil
	})
	if len(st.Active) == 0 {
		st.Active = nil
	}
}

// run makes the Job of the most recent time of the schedule that is
// due, unless it is too late, already made, or forbidden by the
// concurrency policy. It returns the Job it made and how long until the
// next time.
func (r *Reconciler) run(ctx context.Context, cj *api.CronJob, jobs []*api.Job, now time.Time) (*api.Job, time.Duration, error) {
	loc := time.Local
	if tz := cj.Spec.TimeZone; tz != nil {
		l, err := time.LoadLocation(*tz)
		if err != nil {
			r.events.Event(cj, api.EventTypeWarning, ReasonUnknownTimeZone, fmt.Sprintf("invalid timeZone: %q: %s", *tz, err))
			return nil, 0, nil
		}
		loc = l
	}
	sched, err := api.CronParser.Parse(cj.Spec.Schedule)
	if err != nil {
		r.events.Event(cj, api.EventTypeWarning, ReasonUnparseableSchedule, fmt.Sprintf("unparseable schedule: %q : %s", cj.Spec.Schedule, err))
		return nil, 0, nil
	}
	sched = inZone{sched, loc}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return nil, 0, nil
	}
	next := nextAfter(sched, now)
	earliest := cj.CreationTimestamp.Time
	if t := cj.Status.LastScheduleTime; t != nil {
		earliest = t.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		if deadline := now.Add(-time.Duration(*d) * time.Second); deadline.After(earliest) {
			earliest = deadline
		}
	}
	scheduled, missed := mostRecent(sched, earliest, now)
	if scheduled.IsZero() {
		return nil, next, nil
	}
	if missed > tooManyMissed {
		r.events.Event(cj, api.EventTypeWarning, ReasonTooManyMissedTimes, fmt.Sprintf(
			"too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed))
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		r.events.Event(cj, api.EventTypeWarning, ReasonMissSchedule, "Missed scheduled time to start a job: "+scheduled.UTC().Format(time.RFC1123Z))
		return nil, next, nil
	}
	name := JobName(cj.Name, scheduled)
	if slices.ContainsFunc(jobs, func(j *api.Job) bool { return j.Name == name }) {
		return nil, next, nil
	}
	switch cj.Spec.ConcurrencyPolicy {
	case api.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			r.events.Event(cj, api.EventTypeNormal, ReasonJobAlreadyActive,
				"Not starting job because prior execution is running and concurrency policy is Forbid")
			return nil, next, nil
		}
	case api.ReplaceConcurrent:
		for _, ref := range cj.Status.Active {
			_, err := r.store.Delete(ctx, jobKind, cj.Namespace, ref.Name, store.DeleteOptions{Preconditions: &store.Preconditions{UID: ref.UID}})
			if err != nil && !store.IsNotFound(err) {
				return nil, 0, fmt.Errorf("replace job %s/%s: %w", cj.Namespace, ref.Name, err)
			}
			r.events.Event(cj, api.EventTypeNormal, ReasonSuccessfulDelete, "Deleted job "+ref.Name)
		}
		cj.Status.Active = nil
	}
	j := newJob(cj, name, scheduled)
	created, err := r.store.Create(ctx, j)
	switch {
	case store.IsAlreadyExists(err):
		// Made by an earlier pass whose status write was lost.
		created = nil
	case store.IsNamespaceTerminating(err):
		return nil, 0, nil
	case err != nil:
		r.events.Event(cj, api.EventTypeWarning, ReasonFailedCreate, "Error creating job: "+err.Error())
		return nil, 0, fmt.Errorf("create job %s/%s: %w", cj.Namespace, name, err)
	default:
		r.events.Event(cj, api.EventTypeNormal, ReasonSuccessfulCreate, "Created job "+name)
		cj.Status.Active = append(cj.Status.Active, jobRef(created.(*api.Job)))
	}
	t := metav1.NewTime(scheduled)
	cj.Status.LastScheduleTime = &t
	if created == nil {
		return nil, next, nil
	}
	return created.(*api.Job), next, nil
}

// JobName is the name of a CronJob's Job for a scheduled time: the
// CronJob's name and the minutes since the epoch, as Kubernetes names
// it, so that one time makes one Job however often it is looked at.
func JobName(cronJob string, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cronJob, scheduled.Unix()/60)
}

// newJob is the Job of a scheduled time: the template's labels,
// annotations and spec, controlled by the CronJob, annotated with the
// time it was scheduled for.
func newJob(cj *api.CronJob, name string, scheduled time.Time) *api.Job {
	t := cj.Spec.JobTemplate.DeepCopy()
	annotations := t.Annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[api.AnnotationCronJobScheduledTimestamp] = scheduled.Format(time.RFC3339)
	j := &api.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       cj.Namespace,
			Name:            name,
			Labels:          t.Labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, cronJobKind.GVK)},
		},
		Spec: t.Spec,
	}
	api.Default(j)
	return j
}

func jobRef(j *api.Job) api.ObjectReference {
	return api.ObjectReference{Kind: jobKind.GVK.Kind, APIVersion: jobKind.APIVersion(), Namespace: j.Namespace,
		Name: j.Name, UID: string(j.UID), ResourceVersion: j.ResourceVersion}
}

// trim deletes the oldest finished Jobs beyond the history limits, the
// successful and the failed apart; the garbage collector takes their
// pods.
func (r *Reconciler) trim(ctx context.Context, cj *api.CronJob, jobs []*api.Job) []error {
	var ok, failed []*api.Job
	for _, j := range jobs {
		switch c := api.JobFinished(j); {
		case c == nil:
		case c.Type == api.JobComplete:
			ok = append(ok, j)
		default:
			failed = append(failed, j)
		}
	}
	var errs []error
	for _, h := range []struct {
		jobs  []*api.Job
		limit *int32
	}{{ok, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if h.limit == nil || len(h.jobs) <= int(*h.limit) {
			continue
		}
		sort.SliceStable(h.jobs, func(a, b int) bool { return started(h.jobs[a]).Before(started(h.jobs[b])) })
		for _, j := range h.jobs[:len(h.jobs)-int(*h.limit)] {
			_, err := r.store.Delete(ctx, jobKind, j.Namespace, j.Name, store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(j.UID)}})
			switch {
			case err == nil:
				r.events.Event(cj, api.EventTypeNormal, ReasonSuccessfulDelete, "Deleted job "+j.Name)
			case !store.IsNotFound(err):
				errs = append(errs, fmt.Errorf("delete job %s/%s of cronjob %s: %w", j.Namespace, j.Name, cj.Name, err))
			}
		}
	}
	return errs
}

// started is when a Job started, or was made.
func started(j *api.Job) time.Time {
	if j.Status.StartTime != nil {
		return j.Status.StartTime.Time
	}
	return j.CreationTimestamp.Time
}

// inZone reads a schedule in a time zone.
type inZone struct {
	cron.Schedule
	loc *time.Location
}

func (z inZone) Next(t time.Time) time.Time { return z.Schedule.Next(t.In(z.loc)) }
