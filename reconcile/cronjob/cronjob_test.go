package cronjob

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/job"
	"github.com/berth-dev/berth/store"
)

type fixture struct {
	t      *testing.T
	ctx    context.Context
	s      *store.Store
	clock  *clocktesting.FakeClock
	r      *Reconciler
	events *events
}

type events struct{ list []string }

func (e *events) Event(_ api.Object, typ, reason, msg string) {
	e.list = append(e.list, reason+": "+msg)
}

func (e *events) count(reason string) int {
	n := 0
	for _, s := range e.list {
		if strings.HasPrefix(s, reason+": ") {
			n++
		}
	}
	return n
}

// start is a Monday, 10:02 UTC.
var start = time.Date(2026, 11, 30, 10, 2, 0, 0, time.UTC)

func newFixture(t *testing.T) *fixture {
	clk := clocktesting.NewFakeClock(start)
	s, err := store.New(store.Memory{}, store.Options{Clock: clk, Admit: []store.AdmitFunc{job.Admit}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := &fixture{t: t, ctx: context.Background(), s: s, clock: clk, r: NewReconciler(s, clk), events: &events{}}
	f.r.events = f.events
	return f
}

func newCronJob(name, schedule string, policy api.ConcurrencyPolicy) *api.CronJob {
	cj := &api.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	cj.Spec.Schedule = schedule
	cj.Spec.ConcurrencyPolicy = policy
	cj.Spec.JobTemplate.Labels = map[string]string{"app": name}
	cj.Spec.JobTemplate.Spec.Template.Spec = api.PodSpec{RestartPolicy: api.RestartPolicyNever,
		Containers: []api.Container{{Name: "main", Image: "busybox"}}}
	return cj
}

func (f *fixture) create(cj *api.CronJob) {
	f.t.Helper()
	api.Default(cj)
	if errs := api.Validate(cj); len(errs) > 0 {
		f.t.Fatal(errs)
	}
	if _, err := f.s.Create(f.ctx, cj); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) sync(name string) time.Duration {
	f.t.Helper()
	res, err := f.r.Reconcile(f.ctx, "default/"+name)
	if err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	return res.RequeueAfter
}

func (f *fixture) cronJob(name string) *api.CronJob {
	f.t.Helper()
	obj, err := f.s.Get(cronJobKind, "default", name)
	if err != nil {
		f.t.Fatal(err)
	}
	return obj.(*api.CronJob)
}

func (f *fixture) jobs() []*api.Job {
	f.t.Helper()
	objs, _, err := f.s.List(jobKind, store.Filter{Namespace: "default"})
	if err != nil {
		f.t.Fatal(err)
	}
	out := make([]*api.Job, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.Job)
	}
	return out
}

// finish ends a Job as its controller would: Complete or Failed.
func (f *fixture) finish(j *api.Job, ok bool) {
	f.t.Helper()
	j = j.DeepCopy()
	now := metav1.NewTime(f.clock.Now())
	t := api.JobComplete
	if !ok {
		t = api.JobFailed
	}
	j.Status.StartTime = &j.CreationTimestamp
	if ok {
		j.Status.CompletionTime = &now
	}
	j.Status.Conditions = append(j.Status.Conditions, api.JobCondition{Type: t, Status: api.ConditionTrue, LastTransitionTime: now})
	if _, err := f.s.Update(f.ctx, j); err != nil {
		f.t.Fatal(err)
	}
}

// TestWeekOfRuns drives a */5 CronJob through a week of fake time, each
// Job completing before the next is due, every fourth one failing: 2016
// Jobs made, one per time, named for its minute, and the history kept
// at 3 successful and 1 failed.
func TestWeekOfRuns(t *testing.T) {
	f := newFixture(t)
	f.create(newCronJob("tick", "*/5 * * * *", api.AllowConcurrent))
	if wait := f.sync("tick"); wait != 3*time.Minute+100*time.Millisecond {
		t.Fatalf("first run in %v, want 3m0.1s", wait)
	}
	made := 0
	end := start.Add(7 * 24 * time.Hour)
	for {
		next := f.clock.Now().Add(f.sync("tick"))
		if next.After(end) {
			break
		}
		f.clock.SetTime(next)
		f.sync("tick")
		for _, j := range f.jobs() {
			if api.JobFinished(j) == nil {
				made++
				want := JobName("tick", f.clock.Now().Truncate(5*time.Minute))
				if j.Name != want || j.Annotations[api.AnnotationCronJobScheduledTimestamp] == "" || j.Labels["app"] != "tick" {
					t.Fatalf("job %s (annotations %v), want %s", j.Name, j.Annotations, want)
				}
				f.finish(j, made%4 != 0)
			}
		}
	}
	f.sync("tick")
	if made != 7*24*12 {
		t.Errorf("%d jobs made in a week, want %d", made, 7*24*12)
	}
	var ok, failed int
	for _, j := range f.jobs() {
		if api.JobFinished(j).Type == api.JobComplete {
			ok++
		} else {
			failed++
		}
	}
	if ok != 3 || failed != 1 {
		t.Errorf("history: %d successful, %d failed, want 3 and 1", ok, failed)
	}
	cj := f.cronJob("tick")
	if cj.Status.LastScheduleTime == nil || cj.Status.LastSuccessfulTime == nil || len(cj.Status.Active) != 0 {
		t.Errorf("status %+v", cj.Status)
	}
	if n := f.events.count(ReasonSuccessfulCreate); n != made {
		t.Errorf("%d SuccessfulCreate events", n)
	}
}

// TestForbid skips a run while the last one is active, and makes the
// next once it has finished.
func TestForbid(t *testing.T) {
	f := newFixture(t)
	f.create(newCronJob("one", "*/5 * * * *", api.ForbidConcurrent))
	f.clock.SetTime(start.Add(3 * time.Minute))
	f.sync("one")
	if len(f.jobs()) != 1 || len(f.cronJob("one").Status.Active) != 1 {
		t.Fatalf("%d jobs, status %+v", len(f.jobs()), f.cronJob("one").Status)
	}
	f.clock.Step(5 * time.Minute)
	f.sync("one")
	if len(f.jobs()) != 1 || f.events.count(ReasonJobAlreadyActive) != 1 {
		t.Fatalf("forbidden run made: %d jobs, events %q", len(f.jobs()), f.events.list)
	}
	f.finish(f.jobs()[0], true)
	f.clock.Step(5 * time.Minute)
	f.sync("one")
	if len(f.jobs()) != 2 {
		t.Fatalf("%d jobs after the first finished", len(f.jobs()))
	}
}

// TestReplace deletes the active Job for the next run.
func TestReplace(t *testing.T) {
	f := newFixture(t)
	f.create(newCronJob("swap", "*/5 * * * *", api.ReplaceConcurrent))
	f.clock.SetTime(start.Add(3 * time.Minute))
	f.sync("swap")
	first := f.jobs()[0].Name
	f.clock.Step(5 * time.Minute)
	f.sync("swap")
	jobs := f.jobs()
	if len(jobs) != 1 || jobs[0].Name == first {
		t.Fatalf("jobs %v, first %s", jobs, first)
	}
	if cj := f.cronJob("swap"); len(cj.Status.Active) != 1 || cj.Status.Active[0].Name != jobs[0].Name {
		t.Errorf("active %+v", cj.Status.Active)
	}
}

// TestMissedAfterRestart: a control plane down for a day finds 288
// missed times of a */5 CronJob: it makes one Job, for the most recent,
// and warns; with a few missed it makes one Job and no warning; with a
// starting deadline shorter than the delay, none.
func TestMissedAfterRestart(t *testing.T) {
	f := newFixture(t)
	f.create(newCronJob("daily", "*/5 * * * *", api.AllowConcurrent))
	f.clock.SetTime(start.Add(24 * time.Hour))
	f.sync("daily")
	jobs := f.jobs()
	if len(jobs) != 1 || jobs[0].Name != JobName("daily", start.Add(24*time.Hour-2*time.Minute)) {
		t.Fatalf("jobs %d (%v)", len(jobs), jobs)
	}
	if f.events.count(ReasonTooManyMissedTimes) != 1 || !strings.Contains(f.events.list[0], "too many missed start times: 288") {
		t.Errorf("events %q", f.events.list)
	}

	f2 := newFixture(t)
	f2.create(newCronJob("few", "*/5 * * * *", api.AllowConcurrent))
	f2.clock.SetTime(start.Add(20 * time.Minute))
	f2.sync("few")
	if len(f2.jobs()) != 1 || f2.events.count(ReasonTooManyMissedTimes) != 0 {
		t.Errorf("few missed: %d jobs, events %q", len(f2.jobs()), f2.events.list)
	}

	f3 := newFixture(t)
	late := newCronJob("late", "0 * * * *", api.AllowConcurrent)
	late.Spec.StartingDeadlineSeconds = ptrTo(int64(60))
	f3.create(late)
	f3.clock.SetTime(start.Add(time.Hour))
	f3.sync("late")
	if len(f3.jobs()) != 0 {
		t.Errorf("a run past its starting deadline was made")
	}
	f3.clock.SetTime(time.Date(2026, 11, 30, 12, 0, 30, 0, time.UTC))
	f3.sync("late")
	if len(f3.jobs()) != 1 {
		t.Errorf("a run within its starting deadline was not made")
	}
}

// TestTimeZoneAndSuspend reads the schedule in its time zone, and a
// suspended CronJob makes nothing.
func TestTimeZoneAndSuspend(t *testing.T) {
	f := newFixture(t)
	cj := newCronJob("paris", "0 12 * * *", api.AllowConcurrent)
	cj.Spec.TimeZone = ptrTo("Europe/Paris")
	f.create(cj)
	// Noon in Paris is 11:00 UTC in winter.
	if wait := f.sync("paris"); wait != 58*time.Minute+100*time.Millisecond {
		t.Fatalf("next run in %v", wait)
	}
	f.clock.SetTime(time.Date(2026, 11, 30, 11, 0, 1, 0, time.UTC))
	f.sync("paris")
	jobs := f.jobs()
	if len(jobs) != 1 || jobs[0].Annotations[api.AnnotationCronJobScheduledTimestamp] != "2026-11-30T12:00:00+01:00" {
		t.Fatalf("jobs %+v", jobs)
	}

	s := newCronJob("paused", "* * * * *", api.AllowConcurrent)
	s.Spec.Suspend = ptrTo(true)
	f.create(s)
	f.clock.Step(time.Hour)
	f.sync("paused")
	if slices.ContainsFunc(f.jobs(), func(j *api.Job) bool { return strings.HasPrefix(j.Name, "paused-") }) {
		t.Error("a suspended CronJob made a job")
	}
}

func ptrTo[T any](v T) *T { return &v }
