package job

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// fixture is a real store with the Job admission hook, a Reconciler on a
// fake clock, and the events it recorded.
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
	e.list = append(e.list, typ+" "+reason+" "+msg)
}

func (e *events) has(reason string) bool {
	return slices.ContainsFunc(e.list, func(s string) bool { return slices.Contains(splitWords(s), reason) })
}

func splitWords(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

var epoch = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	s, err := store.New(store.Memory{}, store.Options{Clock: clk, Admit: []store.AdmitFunc{Admit}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := &fixture{t: t, ctx: context.Background(), s: s, clock: clk, r: NewReconciler(s, clk), events: &events{}}
	f.r.events = f.events
	return f
}

// newJob is a Job of a busybox pod that restarts Never.
func newJob(name string, completions, parallelism int32) *api.Job {
	j := &api.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if completions > 0 {
		j.Spec.Completions = &completions
	}
	j.Spec.Parallelism = &parallelism
	j.Spec.Template.Spec = api.PodSpec{RestartPolicy: api.RestartPolicyNever,
		Containers: []api.Container{{Name: "main", Image: "busybox", Command: []string{"true"}}}}
	return j
}

// create stores a Job as the API does: defaulted, validated.
func (f *fixture) create(j *api.Job) *api.Job {
	f.t.Helper()
	api.Default(j)
	if errs := api.Validate(j); len(errs) > 0 {
		f.t.Fatalf("invalid job: %v", errs)
	}
	obj, err := f.s.Create(f.ctx, j)
	if err != nil {
		f.t.Fatal(err)
	}
	return obj.(*api.Job)
}

func (f *fixture) job(name string) *api.Job {
	f.t.Helper()
	obj, err := f.s.Get(jobKind, "default", name)
	if err != nil {
		f.t.Fatal(err)
	}
	return obj.(*api.Job)
}

// sync reconciles the Job once, the pod watch played from the store's
// events, and returns when to look again.
func (f *fixture) sync(name string) time.Duration {
	f.t.Helper()
	res, err := f.r.Reconcile(f.ctx, "default/"+name)
	if err != nil {
		f.t.Fatalf("reconcile %s: %v", name, err)
	}
	f.settle()
	return res.RequeueAfter
}

// settle feeds every pod the Job controls to the expectations, as the
// watch would.
func (f *fixture) settle() {
	for _, p := range f.pods() {
		f.r.PodKeys(store.Event{Type: store.Added, Object: p})
	}
}

// pods are every pod of the namespace, by name.
func (f *fixture) pods() []*api.Pod {
	f.t.Helper()
	objs, _, err := f.s.List(podKind, store.Filter{Namespace: "default"})
	if err != nil {
		f.t.Fatal(err)
	}
	out := make([]*api.Pod, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.Pod)
	}
	return out
}

// running are the pods that have not ended and are not being deleted.
func (f *fixture) running() []*api.Pod {
	return slices.DeleteFunc(f.pods(), func(p *api.Pod) bool { return finished(p) || p.DeletionTimestamp != nil })
}

// end ends a pod as its agent would report it: the phase, and its
// container's exit code.
func (f *fixture) end(p *api.Pod, code int32) {
	f.t.Helper()
	c := p.DeepCopy()
	c.Status.Phase = api.PodSucceeded
	if code != 0 {
		c.Status.Phase = api.PodFailed
	}
	c.Status.ContainerStatuses = []api.ContainerStatus{{Name: "main", State: api.ContainerState{
		Terminated: &api.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(f.clock.Now())}}}}
	if _, err := f.s.Update(f.ctx, c); err != nil {
		f.t.Fatal(err)
	}
}

// condition returns the Job's condition of type t, failing without it.
func (f *fixture) condition(j *api.Job, t api.JobConditionType) *api.JobCondition {
	f.t.Helper()
	c := j.Condition(t)
	if c == nil || c.Status != api.ConditionTrue {
		f.t.Fatalf("job %s has no %s condition: %+v", j.Name, t, j.Status)
	}
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, 10*time.Second, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}
