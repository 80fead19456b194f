package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Reasons of the controller's events and of the Suspended condition, as
// Kubernetes gives them.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedCreate     = "FailedCreate"
	ReasonCompleted        = "Completed"
	ReasonSuspended        = "Suspended"
	ReasonResumed          = "Resumed"
	ReasonJobSuspended     = "JobSuspended"
	ReasonJobResumed       = "JobResumed"
)

// Messages of the Job conditions, as Kubernetes writes them.
const (
	msgBackoffLimit     = "Job has reached the specified backoff limit"
	msgDeadline         = "Job was active longer than specified deadline"
	msgMaxFailedIndexes = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes    = "Job has failed indexes"
	msgCompletions      = "Reached expected number of succeeded pods"
)

// BurstPods caps the pods one sync creates or releases, so that a Job of
// thousands shows its progress and no transaction grows without bound.
const BurstPods = 500

// pass is what one pass over a Job found and decided.
type pass struct {
	job     *api.Job // a copy: its status is the one to write
	now     time.Time
	indexed bool
	// active are the pods that run or wait to; terminating those being
	// deleted that have not ended.
	active      []*api.Pod
	terminating int32
	// release are the pods whose tracking finalizer this pass drops, each
	// counted (or ignored) in the status written with it.
	release []*api.Pod
	// backoff is the Job's record once the pods counted here are.
	backoff backoffRecord
	// failJob is set when a pod failure policy rule fails the Job.
	failJob *policyMatch
	// created and deleted pods, for the status counts.
	created int
	// all are the Job's pods.
	all []*api.Pod
	// more says that pods that ended are left to count beyond this
	// pass's burst: until they are, the pass makes no pod, as it cannot
	// tell how many the Job still needs.
	more bool
}

// graceful reports whether a pod being deleted waits for its agent.
func graceful(p *api.Pod) bool {
	g := p.DeletionGracePeriodSeconds
	return g != nil && *g > 0
}

// Reconcile converges the Job named key.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := reconcile.SplitKey(key)
	obj, err := r.store.Get(jobKind, ns, name)
	if store.IsNotFound(err) {
		r.expectations.Forget(key)
		r.mu.Lock()
		delete(r.backoffs, key)
		r.mu.Unlock()
		return reconcile.Result{}, r.releaseOrphans(ctx, ns, name)
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get job %s: %w", key, err)
	}
	j := obj.(*api.Job)
	if m := j.Spec.ManagedBy; m != nil && *m != api.JobControllerName {
		return reconcile.Result{}, nil
	}
	if j.Spec.Selector == nil || j.Spec.Parallelism == nil || j.Spec.BackoffLimit == nil {
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("job %s: no selector, parallelism or backoffLimit: it was not stored through the API", key))
	}
	satisfied := r.expectations.Satisfied(key)
	listed, _, err := r.store.List(podKind, store.Filter{Namespace: ns, Index: store.IndexOwner, Value: string(j.UID)})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("list pods of job %s: %w", key, err)
	}
	s := &pass{job: j.DeepCopy(), now: r.clock.Now(), indexed: j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == api.IndexedCompletion}
	r.mu.Lock()
	s.backoff = r.backoffs[key]
	r.mu.Unlock()
	pods := make([]*api.Pod, 0, len(listed))
	for _, o := range listed {
		if p := o.(*api.Pod); controlledBy(p, j.UID) {
			pods = append(pods, p)
		}
	}
	s.count(pods)

	var wait []time.Duration
	var errs []error
	st := &s.job.Status
	switch {
	case api.JobFinished(j) != nil:
		if d, err := r.expire(ctx, j, s.now); err != nil || d > 0 {
			wait = append(wait, d)
			errs = append(errs, err)
		} else if d == 0 && j.Spec.TTLSecondsAfterFinished != nil {
			return reconcile.Result{}, nil // deleted
		}
	case j.DeletionTimestamp != nil:
		// Its pods go with it: nothing new is made, every pod is released.
	default:
		wait = append(wait, r.converge(ctx, s, satisfied, &errs)...)
		if ttl := j.Spec.TTLSecondsAfterFinished; ttl != nil && api.JobFinished(s.job) != nil {
			wait = append(wait, time.Duration(*ttl)*time.Second)
		}
	}
	st.Active = int32(len(s.active) + s.created)
	st.Terminating = ptrTo(s.terminating)
	var ready int32
	for _, p := range s.active {
		if p.Ready() {
			ready++
		}
	}
	st.Ready = ptrTo(ready)
	if err := r.write(ctx, j, s); err != nil {
		errs = append(errs, err)
	} else {
		r.mu.Lock()
		r.backoffs[key] = s.backoff
		r.mu.Unlock()
		r.announce(j, s.job)
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	if s.more {
		wait = append(wait, time.Millisecond)
	}
	return reconcile.Result{RequeueAfter: soonest(wait)}, nil
}

// count sorts the Job's pods into active and terminating ones, and finds
// those that ended (or, being deleted, count as failed) and still hold
// the finalizer: their count goes into the status in the same
// transaction that releases them, so that each is counted once, however
// the process stops.
func (s *pass) count(pods []*api.Pod) {
	j := s.job
	st := &j.Status
	completions := int32(0)
	if j.Spec.Completions != nil {
		completions = *j.Spec.Completions
	}
	completed, _ := api.ParseIndexes(st.CompletedIndexes, completions)
	var failedIdx api.Indexes
	if st.FailedIndexes != nil {
		failedIdx, _ = api.ParseIndexes(*st.FailedIndexes, completions)
	}
	var newCompleted, newFailedIdx []int32
	var succeededAt, failedAt []time.Time
	onlyFailed := j.Spec.PodReplacementPolicy != nil && *j.Spec.PodReplacementPolicy == api.PodReplacementFailed
	interim := hasCondition(j, api.JobFailureTarget) || hasCondition(j, api.JobSuccessCriteriaMet) ||
		api.JobFinished(j) != nil || (j.Spec.Suspend != nil && *j.Spec.Suspend)
	s.all = pods
	for _, p := range pods {
		deleting := p.DeletionTimestamp != nil
		done := finished(p)
		if j.DeletionTimestamp != nil {
			// The Job goes, and its pods with it: each is released.
			if tracked(p) && len(s.release) < BurstPods {
				s.release = append(s.release, p)
			}
			continue
		}
		if !done && !deleting {
			s.active = append(s.active, p)
			continue
		}
		// A pod being deleted with no grace left goes once it is
		// released; one in its grace period is still terminating.
		over := deleting && (!graceful(p) || !p.DeletionTimestamp.After(s.now))
		if !tracked(p) || len(s.release) >= BurstPods {
			if !done {
				s.terminating++
			}
			s.more = s.more || tracked(p)
			continue
		}
		// A pod being deleted that has not ended counts as failed at once
		// (podReplacementPolicy TerminatingOrFailed), or, with Failed, once
		// its agent is done with it; one the controller deleted to stop
		// the Job, or to suspend it, counts for nothing.
		if !done && onlyFailed && !over {
			s.terminating++
			continue
		}
		if !done && !over {
			s.terminating++
		}
		s.release = append(s.release, p)
		idx := int32(-1)
		if s.indexed {
			idx = podIndex(p, completions)
		}
		switch {
		case p.Status.Phase == api.PodSucceeded:
			if s.indexed {
				if idx >= 0 && !completed.Has(idx) {
					newCompleted = append(newCompleted, idx)
				}
				continue
			}
			st.Succeeded++
			succeededAt = append(succeededAt, finishTime(p, s.now))
		case !done && interim:
			// Stopped by the controller.
		default:
			var m *policyMatch
			if p.Status.Phase == api.PodFailed {
				m = matchPodFailurePolicy(j.Spec.PodFailurePolicy, p)
			}
			if m != nil && m.action == api.PodFailurePolicyActionIgnore {
				continue
			}
			st.Failed++
			failedAt = append(failedAt, finishTime(p, s.now))
			if m != nil && m.action == api.PodFailurePolicyActionFailJob && s.failJob == nil {
				s.failJob = m
			}
			if idx >= 0 && j.Spec.BackoffLimitPerIndex != nil && !failedIdx.Has(idx) &&
				(m != nil && m.action == api.PodFailurePolicyActionFailIndex || indexFailures(p) >= *j.Spec.BackoffLimitPerIndex) {
				newFailedIdx = append(newFailedIdx, idx)
			}
		}
	}
	if s.indexed {
		completed = completed.Union(api.IndexesOf(newCompleted))
		st.CompletedIndexes = completed.String()
		st.Succeeded = int32(completed.Len())
		for range newCompleted {
			succeededAt = append(succeededAt, s.now)
		}
		if j.Spec.BackoffLimitPerIndex != nil {
			f := failedIdx.Union(api.IndexesOf(newFailedIdx)).String()
			st.FailedIndexes = &f
		}
	}
	s.backoff = s.backoff.next(succeededAt, failedAt)
}

// converge decides, for a Job that is neither finished nor being
// deleted, whether it has failed or succeeded, and otherwise creates or
// deletes pods toward its parallelism. It returns when to look again.
func (r *Reconciler) converge(ctx context.Context, s *pass, satisfied bool, errs *[]error) []time.Duration {
	j := s.job
	st := &j.Status
	var wait []time.Duration
	suspended := j.Spec.Suspend != nil && *j.Spec.Suspend
	if st.StartTime == nil && !suspended {
		st.StartTime = &metav1.Time{Time: s.now}
	}
	if !hasCondition(j, api.JobFailureTarget) && !hasCondition(j, api.JobSuccessCriteriaMet) {
		if reason, msg := s.failure(); reason != "" {
			setCondition(j, api.JobFailureTarget, api.ConditionTrue, reason, msg, s.now)
		} else if reason, msg := s.success(); reason != "" {
			setCondition(j, api.JobSuccessCriteriaMet, api.ConditionTrue, reason, msg, s.now)
		}
	}
	if c := interimCondition(j); c != nil {
		// Stop what runs; the Job finishes once every pod has ended and
		// been counted.
		*errs = append(*errs, r.deletePods(ctx, j, s.active)...)
		s.terminating += int32(len(s.active))
		s.active = nil
		if s.terminating == 0 && !s.holdsUncounted() {
			final := api.JobComplete
			if c.Type == api.JobFailureTarget {
				final = api.JobFailed
			} else {
				st.CompletionTime = &metav1.Time{Time: s.now}
			}
			setCondition(j, final, api.ConditionTrue, c.Reason, c.Message, s.now)
		}
		return nil
	}
	if suspended {
		*errs = append(*errs, r.deletePods(ctx, j, s.active)...)
		s.terminating += int32(len(s.active))
		s.active = nil
		setCondition(j, api.JobSuspended, api.ConditionTrue, ReasonJobSuspended, "Job suspended", s.now)
		return nil
	}
	if c := j.Condition(api.JobSuspended); c != nil && c.Status == api.ConditionTrue {
		setCondition(j, api.JobSuspended, api.ConditionFalse, ReasonJobResumed, "Job resumed", s.now)
		st.StartTime = &metav1.Time{Time: s.now}
	}
	if ads := j.Spec.ActiveDeadlineSeconds; ads != nil {
		wait = append(wait, st.StartTime.Add(time.Duration(*ads)*time.Second).Sub(s.now))
	}
	if !satisfied || s.more {
		return wait
	}
	d, err := r.managePods(ctx, s)
	if err != nil {
		*errs = append(*errs, err)
	}
	return append(wait, d)
}

// failure is the reason and message of the FailureTarget condition when
// the Job has failed: a pod failure policy rule, the back-off limit, the
// deadline, or its indexes.
func (s *pass) failure() (string, string) {
	j := s.job
	st := &j.Status
	if s.failJob != nil {
		return api.JobReasonPodFailurePolicy, s.failJob.message
	}
	if st.Failed > *j.Spec.BackoffLimit {
		return api.JobReasonBackoffLimitExceeded, msgBackoffLimit
	}
	if j.Spec.Template.Spec.RestartPolicy == api.RestartPolicyOnFailure {
		var n int32
		for _, p := range s.active {
			n += restarts(p)
		}
		if n > 0 && n >= *j.Spec.BackoffLimit {
			return api.JobReasonBackoffLimitExceeded, msgBackoffLimit
		}
	}
	suspended := j.Spec.Suspend != nil && *j.Spec.Suspend
	if ads := j.Spec.ActiveDeadlineSeconds; ads != nil && st.StartTime != nil && !suspended &&
		!s.now.Before(st.StartTime.Add(time.Duration(*ads)*time.Second)) {
		return api.JobReasonDeadlineExceeded, msgDeadline
	}
	if s.indexed && st.FailedIndexes != nil && *st.FailedIndexes != "" {
		failed, _ := api.ParseIndexes(*st.FailedIndexes, *j.Spec.Completions)
		if m := j.Spec.MaxFailedIndexes; m != nil && int32(failed.Len()) > *m {
			return api.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes
		}
		if int32(failed.Len())+st.Succeeded >= *j.Spec.Completions {
			return api.JobReasonFailedIndexes, msgFailedIndexes
		}
	}
	return "", ""
}

// success is the reason and message of the SuccessCriteriaMet condition
// when the Job has succeeded.
func (s *pass) success() (string, string) {
	j := s.job
	st := &j.Status
	if s.indexed && j.Spec.SuccessPolicy != nil {
		completed, _ := api.ParseIndexes(st.CompletedIndexes, *j.Spec.Completions)
		for i, rule := range j.Spec.SuccessPolicy.Rules {
			if ruleMet(rule, completed, *j.Spec.Completions) {
				return api.JobReasonSuccessPolicy, fmt.Sprintf("Matched rules at index %d", i)
			}
		}
	}
	switch c := j.Spec.Completions; {
	case c == nil:
		if st.Succeeded > 0 && len(s.active) == 0 {
			return api.JobReasonCompletionsReached, msgCompletions
		}
	case st.Succeeded >= *c:
		return api.JobReasonCompletionsReached, msgCompletions
	}
	return "", ""
}

// ruleMet reports whether a success policy rule is met by the completed
// indexes.
func ruleMet(rule api.SuccessPolicyRule, completed api.Indexes, completions int32) bool {
	var n int32
	if rule.SucceededIndexes != nil {
		want, err := api.ParseIndexes(*rule.SucceededIndexes, completions)
		if err != nil {
			return false
		}
		all := true
		for _, iv := range want {
			for i := iv[0]; i <= iv[1]; i++ {
				if completed.Has(i) {
					n++
				} else {
					all = false
				}
			}
		}
		if rule.SucceededCount == nil {
			return all
		}
	} else {
		n = int32(completed.Len())
	}
	return n >= *rule.SucceededCount
}

// holdsUncounted reports whether a pod that ended is still to be
// counted after this pass: more than one pass's burst.
func (s *pass) holdsUncounted() bool { return s.more }

// managePods creates pods up to what the Job wants running, after the
// back-off since its last failure, or deletes what runs beyond its
// parallelism. It returns how long until the back-off allows a pod.
func (r *Reconciler) managePods(ctx context.Context, s *pass) (time.Duration, error) {
	j := s.job
	parallelism := *j.Spec.Parallelism
	running := int32(len(s.active))
	if j.Spec.PodReplacementPolicy != nil && *j.Spec.PodReplacementPolicy == api.PodReplacementFailed {
		running += s.terminating
	}
	var want int32
	var indexes []int32
	switch c := j.Spec.Completions; {
	case s.indexed:
		indexes = s.pendingIndexes(parallelism - running)
		want = running + int32(len(indexes))
	case c == nil:
		want = parallelism
		if j.Status.Succeeded > 0 {
			want = running
		}
	default:
		want = max(min(*c-j.Status.Succeeded, parallelism), 0)
	}
	switch {
	case want < int32(len(s.active)) && !s.indexed:
		victims := rankForDeletion(s.active)[:int32(len(s.active))-want]
		errs := r.deletePods(ctx, j, victims)
		s.terminating += int32(len(victims))
		s.active = slices.DeleteFunc(s.active, func(p *api.Pod) bool { return slices.Contains(victims, p) })
		return 0, errors.Join(errs...)
	case want > running:
		if d := s.backoff.remaining(s.now); d > 0 {
			return d, nil
		}
		n := min(int(want-running), BurstPods)
		if s.indexed {
			indexes = indexes[:n]
		}
		return 0, r.createPods(ctx, s, n, indexes)
	}
	return 0, nil
}

// pendingIndexes are the lowest indexes, at most n, that have neither
// succeeded, failed, nor a pod.
func (s *pass) pendingIndexes(n int32) []int32 {
	j := s.job
	if n <= 0 {
		return nil
	}
	completions := *j.Spec.Completions
	completed, _ := api.ParseIndexes(j.Status.CompletedIndexes, completions)
	var failed api.Indexes
	if j.Status.FailedIndexes != nil {
		failed, _ = api.ParseIndexes(*j.Status.FailedIndexes, completions)
	}
	busy := map[int32]bool{}
	for _, p := range s.active {
		busy[podIndex(p, completions)] = true
	}
	var out []int32
	for i := int32(0); i < completions && int32(len(out)) < n; i++ {
		if !completed.Has(i) && !failed.Has(i) && !busy[i] {
			out = append(out, i)
		}
	}
	return out
}

// rankForDeletion orders pods, those to delete first: unscheduled, then
// not ready, then the newest.
func rankForDeletion(pods []*api.Pod) []*api.Pod {
	out := slices.Clone(pods)
	sort.SliceStable(out, func(a, b int) bool {
		pa, pb := out[a], out[b]
		if (pa.Spec.NodeName == "") != (pb.Spec.NodeName == "") {
			return pa.Spec.NodeName == ""
		}
		if pa.Ready() != pb.Ready() {
			return !pa.Ready()
		}
		return pb.CreationTimestamp.Before(&pa.CreationTimestamp)
	})
	return out
}

// createPods creates n pods (or one for each index) in transactions of
// growing size, as a ReplicaSet's slow start: a Job that cannot create
// pods learns it from one.
func (r *Reconciler) createPods(ctx context.Context, s *pass, n int, indexes []int32) error {
	j := s.job
	key := reconcile.ObjectKey(j)
	failures := s.indexFailures()
	r.expectations.ExpectCreations(key, n)
	made := 0
	var err error
	for batch := 1; made < n; batch = min(2*batch, n-made) {
		var names []string
		_, err = r.store.Txn(ctx, func(tx *store.Txn) error {
			names = names[:0]
			for i := range batch {
				idx := int32(-1)
				if indexes != nil {
					idx = indexes[made+i]
				}
				p, err := tx.Create(newPod(j, idx, failures[idx]))
				if err != nil {
					return err
				}
				names = append(names, p.GetName())
			}
			return nil
		})
		if err != nil {
			break
		}
		made += batch
		for _, name := range names {
			r.events.Event(j, api.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: "+name)
		}
	}
	s.created = made
	for range n - made {
		r.expectations.CreationObserved(key)
	}
	if err != nil && !store.IsNamespaceTerminating(err) {
		r.events.Event(j, api.EventTypeWarning, ReasonFailedCreate, "Error creating: "+err.Error())
		return fmt.Errorf("create pods for job %s: created %d of %d: %w", key, made, n, err)
	}
	return nil
}

// indexFailures is, with backoffLimitPerIndex, how many pods of each
// index have failed, as the annotations of the pods the controller made
// say.
func (s *pass) indexFailures() map[int32]int32 {
	out := map[int32]int32{}
	if !s.indexed || s.job.Spec.BackoffLimitPerIndex == nil {
		return out
	}
	for _, p := range s.all {
		if p.Status.Phase == api.PodFailed {
			i := podIndex(p, *s.job.Spec.Completions)
			out[i] = max(out[i], indexFailures(p)+1)
		}
	}
	return out
}

// deletePods deletes pods of the Job; each stays, being deleted, until
// it has ended and been counted.
func (r *Reconciler) deletePods(ctx context.Context, j *api.Job, pods []*api.Pod) []error {
	var errs []error
	for _, p := range pods {
		_, err := r.store.Delete(ctx, podKind, p.Namespace, p.Name, store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(p.UID)}})
		switch {
		case err == nil:
			r.events.Event(j, api.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: "+p.Name)
		case !store.IsNotFound(err):
			errs = append(errs, fmt.Errorf("delete pod %s/%s of job %s: %w", p.Namespace, p.Name, j.Name, err))
		}
	}
	return errs
}

// write stores the Job's status and releases the pods counted in it, in
// one transaction: a pod is counted exactly when its finalizer goes. A
// Job being deleted releases every pod.
func (r *Reconciler) write(ctx context.Context, old *api.Job, s *pass) error {
	changed := !equality.Semantic.DeepEqual(old.Status, s.job.Status)
	if !changed && len(s.release) == 0 {
		return nil
	}
	_, err := r.store.Txn(ctx, func(tx *store.Txn) error {
		if changed {
			if _, err := tx.Update(s.job.DeepCopy()); err != nil {
				return err
			}
		}
		for _, p := range s.release {
			// Read again inside the transaction: an agent's later status
			// write (the pod ended before it, and stays ended) must not
			// undo the count.
			cur, err := tx.Get(podKind, p.Namespace, p.Name)
			if store.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			if cur.GetUID() != p.UID || !tracked(cur.(*api.Pod)) {
				continue
			}
			c := cur.(*api.Pod).DeepCopy()
			c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == api.FinalizerJobTracking })
			if _, err := tx.Update(c); err != nil && !store.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("update status of job %s/%s: %w", old.Namespace, old.Name, err)
	}
	return nil
}

// announce records the events of the conditions this pass set.
func (r *Reconciler) announce(old, j *api.Job) {
	for _, c := range j.Status.Conditions {
		if prev := old.Condition(c.Type); prev != nil && prev.Status == c.Status {
			continue
		}
		switch {
		case c.Type == api.JobComplete:
			r.events.Event(j, api.EventTypeNormal, ReasonCompleted, "Job completed")
		case c.Type == api.JobFailed:
			r.events.Event(j, api.EventTypeWarning, c.Reason, c.Message)
		case c.Type == api.JobSuspended && c.Status == api.ConditionTrue:
			r.events.Event(j, api.EventTypeNormal, ReasonSuspended, "Job suspended")
		case c.Type == api.JobSuspended:
			r.events.Event(j, api.EventTypeNormal, ReasonResumed, "Job resumed")
		}
	}
}

// expire deletes a finished Job whose ttlSecondsAfterFinished has run
// out, as Kubernetes' TTL-after-finished controller; its pods go with it
// through the garbage collector. It returns how long until it expires.
func (r *Reconciler) expire(ctx context.Context, j *api.Job, now time.Time) (time.Duration, error) {
	ttl := j.Spec.TTLSecondsAfterFinished
	if ttl == nil || j.DeletionTimestamp != nil {
		return -1, nil
	}
	at := api.JobFinished(j).LastTransitionTime.Time
	if j.Status.CompletionTime != nil {
		at = j.Status.CompletionTime.Time
	}
	if d := at.Add(time.Duration(*ttl) * time.Second).Sub(now); d > 0 {
		return d, nil
	}
	_, err := r.store.Delete(ctx, jobKind, j.Namespace, j.Name, store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(j.UID)}})
	if err != nil && !store.IsNotFound(err) {
		return -1, fmt.Errorf("delete expired job %s/%s: %w", j.Namespace, j.Name, err)
	}
	return 0, nil
}

// releaseOrphans drops the tracking finalizer from the pods of a Job
// that is gone, for the garbage collector to delete them, or that the
// Job's deletion orphaned (their ownerReferences removed).
func (r *Reconciler) releaseOrphans(ctx context.Context, ns, name string) error {
	pods, _, err := r.store.List(podKind, store.Filter{Namespace: ns, Predicate: func(o api.Object) bool {
		ref := metav1.GetControllerOfNoCopy(o)
		if ref == nil {
			return o.GetLabels()[api.LabelJobName] == name && tracked(o.(*api.Pod))
		}
		return ref.Kind == jobKind.GVK.Kind && ref.Name == name && tracked(o.(*api.Pod))
	}})
	if err != nil {
		return fmt.Errorf("list pods of deleted job %s/%s: %w", ns, name, err)
	}
	var errs []error
	for _, o := range pods {
		p := o.(*api.Pod).DeepCopy()
		p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == api.FinalizerJobTracking })
		if _, err := r.store.Update(ctx, p); err != nil && !store.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func hasCondition(j *api.Job, t api.JobConditionType) bool {
	c := j.Condition(t)
	return c != nil && c.Status == api.ConditionTrue
}

// interimCondition is the Job's FailureTarget or SuccessCriteriaMet
// condition: it has failed or succeeded, and its pods are stopping.
func interimCondition(j *api.Job) *api.JobCondition {
	for _, t := range []api.JobConditionType{api.JobFailureTarget, api.JobSuccessCriteriaMet} {
		if c := j.Condition(t); c != nil && c.Status == api.ConditionTrue {
			return c
		}
	}
	return nil
}

// setCondition sets a condition's status, reason and message, keeping
// its transition time when the status does not change.
func setCondition(j *api.Job, t api.JobConditionType, status api.ConditionStatus, reason, msg string, now time.Time) {
	ts := metav1.NewTime(now)
	if c := j.Condition(t); c != nil {
		if c.Status != status {
			c.LastTransitionTime = ts
		}
		if c.Status != status || c.Reason != reason || c.Message != msg {
			c.LastProbeTime = ts
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		return
	}
	j.Status.Conditions = append(j.Status.Conditions, api.JobCondition{Type: t, Status: status, Reason: reason, Message: msg,
		LastProbeTime: ts, LastTransitionTime: ts})
}

// soonest is the shortest positive wait, 0 for none.
func soonest(ds []time.Duration) time.Duration {
	var out time.Duration
	for _, d := range ds {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
