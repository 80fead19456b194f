package job

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// TestCompletions runs a Job of 5 completions 2 at a time: never more
// than 2 pods, each counted once as its finalizer goes, then
// SuccessCriteriaMet and Complete with CompletionsReached.
func TestCompletions(t *testing.T) {
	f := newFixture(t)
	j := f.create(newJob("pi", 5, 2))
	if got := j.Spec.Selector.MatchLabels[api.LabelJobControllerUID]; got != string(j.UID) {
		t.Fatalf("selector %v, uid %s", j.Spec.Selector, j.UID)
	}
	if j.Spec.Template.Labels[api.LabelJobName] != "pi" {
		t.Fatalf("template labels %v", j.Spec.Template.Labels)
	}
	for range 10 {
		f.sync("pi")
		run := f.running()
		if len(run) > 2 {
			t.Fatalf("%d pods run at once", len(run))
		}
		if len(run) == 0 {
			break
		}
		p := run[0]
		if !tracked(p) || p.Labels[api.LabelJobControllerUID] != string(j.UID) || p.Labels[api.LabelLegacyJobName] != "pi" ||
			!strings.HasPrefix(p.Name, "pi-") {
			t.Fatalf("pod %s: labels %v finalizers %v", p.Name, p.Labels, p.Finalizers)
		}
		f.end(p, 0)
		f.clock.Step(time.Second)
	}
	j = f.job("pi")
	if j.Status.Succeeded != 5 || j.Status.Failed != 0 || j.Status.Active != 0 || j.Status.CompletionTime == nil {
		t.Fatalf("status %+v", j.Status)
	}
	f.condition(j, api.JobSuccessCriteriaMet)
	if c := f.condition(j, api.JobComplete); c.Reason != api.JobReasonCompletionsReached {
		t.Errorf("Complete %+v", c)
	}
	for _, p := range f.pods() {
		if tracked(p) {
			t.Errorf("pod %s still held", p.Name)
		}
	}
	if len(f.pods()) != 5 {
		t.Errorf("%d pods made, want 5", len(f.pods()))
	}
	if !f.events.has(ReasonCompleted) || !f.events.has(ReasonSuccessfulCreate) {
		t.Errorf("events %q", f.events.list)
	}
	// Counted once: syncing again, or a pod deleted, changes nothing.
	for _, p := range f.pods() {
		if _, err := f.s.Delete(f.ctx, podKind, "default", p.Name, store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.sync("pi")
	if j2 := f.job("pi"); j2.Status.Succeeded != 5 || j2.ResourceVersion != j.ResourceVersion {
		t.Errorf("after the pods went: %+v", j2.Status)
	}
}

// TestBackoffLimit fails every pod of a Job with backoffLimit 2: the
// next pod waits 10 s, then 20 s, on the fake clock; the third failure
// fails the Job with BackoffLimitExceeded.
func TestBackoffLimit(t *testing.T) {
	f := newFixture(t)
	j := newJob("flaky", 1, 1)
	j.Spec.BackoffLimit = ptrTo(int32(2))
	f.create(j)
	f.sync("flaky")
	for i, wantDelay := range []time.Duration{10 * time.Second, 20 * time.Second} {
		run := f.running()
		if len(run) != 1 {
			t.Fatalf("failure %d: %d pods", i, len(run))
		}
		f.end(run[0], 1)
		if wait := f.sync("flaky"); wait != wantDelay {
			t.Fatalf("failure %d: next pod in %v, want %v", i, wait, wantDelay)
		}
		if len(f.running()) != 0 {
			t.Fatalf("failure %d: a pod started within the back-off", i)
		}
		f.clock.Step(wantDelay - time.Second)
		f.sync("flaky")
		if len(f.running()) != 0 {
			t.Fatalf("failure %d: a pod started a second early", i)
		}
		f.clock.Step(time.Second)
		f.sync("flaky")
	}
	f.end(f.running()[0], 1)
	f.sync("flaky")
	j = f.job("flaky")
	if c := f.condition(j, api.JobFailed); c.Reason != api.JobReasonBackoffLimitExceeded || c.Message != msgBackoffLimit {
		t.Errorf("Failed %+v", c)
	}
	f.condition(j, api.JobFailureTarget)
	if j.Status.Failed != 3 || j.Status.Succeeded != 0 || j.Status.CompletionTime != nil {
		t.Errorf("status %+v", j.Status)
	}
	if !f.events.has(api.JobReasonBackoffLimitExceeded) {
		t.Errorf("events %q", f.events.list)
	}
}

// TestBackoffDelay is Kubernetes' sequence: 10 s doubling to 6 minutes.
func TestBackoffDelay(t *testing.T) {
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 320 * time.Second, 360 * time.Second, 360 * time.Second}
	for n, d := range want {
		if got := (backoffRecord{failures: n}).delay(); got != d {
			t.Errorf("%d failures: %v, want %v", n, got, d)
		}
	}
	b := backoffRecord{}.next(nil, []time.Time{epoch, epoch.Add(time.Second)})
	if b.failures != 2 || !b.lastFailure.Equal(epoch.Add(time.Second)) {
		t.Errorf("two failures: %+v", b)
	}
	if b = b.next([]time.Time{epoch.Add(2 * time.Second)}, []time.Time{epoch.Add(3 * time.Second)}); b.failures != 1 {
		t.Errorf("a success then a failure: %+v", b)
	}
	if b.remaining(epoch.Add(3*time.Second)) != 10*time.Second {
		t.Errorf("remaining %v", b.remaining(epoch.Add(3*time.Second)))
	}
}

// TestActiveDeadline fails a Job that runs past activeDeadlineSeconds:
// its pod is deleted, then, once the pod is gone, Failed with
// DeadlineExceeded; the stopped pod is not counted as a failure.
func TestActiveDeadline(t *testing.T) {
	f := newFixture(t)
	j := newJob("slow", 1, 1)
	j.Spec.ActiveDeadlineSeconds = ptrTo(int64(30))
	f.create(j)
	if wait := f.sync("slow"); wait != 30*time.Second {
		t.Fatalf("looks again in %v, want 30s", wait)
	}
	f.clock.Step(30 * time.Second)
	f.sync("slow")
	j = f.job("slow")
	f.condition(j, api.JobFailureTarget)
	f.sync("slow")
	j = f.job("slow")
	if c := f.condition(j, api.JobFailed); c.Reason != api.JobReasonDeadlineExceeded || c.Message != msgDeadline {
		t.Errorf("Failed %+v", c)
	}
	if j.Status.Failed != 0 || j.Status.Active != 0 || len(f.pods()) != 0 {
		t.Errorf("status %+v, %d pods left", j.Status, len(f.pods()))
	}
}

// TestIndexed runs an Indexed Job: each pod has its index as an
// annotation, a label, JOB_COMPLETION_INDEX and a hostname; an index
// that succeeds twice counts once.
func TestIndexed(t *testing.T) {
	f := newFixture(t)
	j := newJob("shard", 3, 3)
	j.Spec.CompletionMode = ptrTo(api.IndexedCompletion)
	f.create(j)
	f.sync("shard")
	run := f.running()
	if len(run) != 3 {
		t.Fatalf("%d pods", len(run))
	}
	seen := map[string]bool{}
	for _, p := range run {
		idx := p.Annotations[api.AnnotationJobCompletionIndex]
		seen[idx] = true
		if p.Labels[api.AnnotationJobCompletionIndex] != idx || p.Spec.Hostname != "shard-"+idx ||
			!strings.HasPrefix(p.Name, "shard-"+idx+"-") {
			t.Errorf("pod %s: labels %v hostname %q", p.Name, p.Labels, p.Spec.Hostname)
		}
		env := p.Spec.Containers[0].Env
		if len(env) != 1 || env[0].Name != api.EnvJobCompletionIndex || env[0].Value != idx {
			t.Errorf("pod %s env %v", p.Name, env)
		}
	}
	if len(seen) != 3 || !seen["0"] || !seen["2"] {
		t.Fatalf("indexes %v", seen)
	}
	byIndex := func(i string) *api.Pod {
		for _, p := range f.running() {
			if p.Annotations[api.AnnotationJobCompletionIndex] == i {
				return p
			}
		}
		return nil
	}
	f.end(byIndex("1"), 0)
	f.end(byIndex("2"), 3)
	f.sync("shard")
	j = f.job("shard")
	if j.Status.CompletedIndexes != "1" || j.Status.Succeeded != 1 || j.Status.Failed != 1 {
		t.Fatalf("status %+v", j.Status)
	}
	f.clock.Step(10 * time.Second)
	f.sync("shard")
	if p := byIndex("2"); p == nil {
		t.Fatal("index 2 was not retried")
	}
	f.end(byIndex("0"), 0)
	f.end(byIndex("2"), 0)
	f.sync("shard")
	j = f.job("shard")
	if j.Status.CompletedIndexes != "0-2" || j.Status.Succeeded != 3 {
		t.Fatalf("status %+v", j.Status)
	}
	f.condition(j, api.JobComplete)
}

// TestBackoffLimitPerIndex fails one index past its limit: it is
// recorded in failedIndexes, the others go on, and the Job fails with
// FailedIndexes once every index has an outcome.
func TestBackoffLimitPerIndex(t *testing.T) {
	f := newFixture(t)
	j := newJob("perindex", 2, 2)
	j.Spec.CompletionMode = ptrTo(api.IndexedCompletion)
	j.Spec.BackoffLimitPerIndex = ptrTo(int32(1))
	f.create(j)
	f.sync("perindex")
	index := func(i string) *api.Pod {
		for _, p := range f.running() {
			if p.Annotations[api.AnnotationJobCompletionIndex] == i {
				return p
			}
		}
		t.Fatalf("no pod of index %s", i)
		return nil
	}
	f.end(index("0"), 1)
	f.sync("perindex")
	f.clock.Step(10 * time.Second)
	f.sync("perindex")
	if p := index("0"); p.Annotations[api.AnnotationJobIndexFailureCount] != "1" {
		t.Fatalf("retry of index 0: annotations %v", p.Annotations)
	}
	f.end(index("0"), 1)
	f.sync("perindex")
	j = f.job("perindex")
	if j.Status.FailedIndexes == nil || *j.Status.FailedIndexes != "0" || j.Condition(api.JobFailureTarget) != nil {
		t.Fatalf("status %+v", j.Status)
	}
	f.end(index("1"), 0)
	f.sync("perindex")
	f.sync("perindex")
	j = f.job("perindex")
	if c := f.condition(j, api.JobFailed); c.Reason != api.JobReasonFailedIndexes {
		t.Errorf("Failed %+v", c)
	}
}

// TestPodFailurePolicy: exit code 42 fails the Job at once with
// PodFailurePolicy; a pod with a DisruptionTarget condition is ignored.
func TestPodFailurePolicy(t *testing.T) {
	f := newFixture(t)
	j := newJob("policy", 1, 1)
	j.Spec.PodFailurePolicy = &api.PodFailurePolicy{Rules: []api.PodFailurePolicyRule{
		{Action: api.PodFailurePolicyActionIgnore, OnPodConditions: []api.PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget"}}},
		{Action: api.PodFailurePolicyActionFailJob, OnExitCodes: &api.PodFailurePolicyOnExitCodesRequirement{
			Operator: api.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
	}}
	f.create(j)
	f.sync("policy")
	// Disrupted: ignored, replaced at once.
	p := f.running()[0].DeepCopy()
	p.Status.Phase = api.PodFailed
	p.Status.Conditions = []api.PodCondition{{Type: "DisruptionTarget", Status: api.ConditionTrue}}
	if _, err := f.s.Update(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	f.sync("policy")
	if j = f.job("policy"); j.Status.Failed != 0 || len(f.running()) != 1 {
		t.Fatalf("after an ignored failure: %+v, %d running", j.Status, len(f.running()))
	}
	f.end(f.running()[0], 42)
	f.sync("policy")
	j = f.job("policy")
	c := f.condition(j, api.JobFailed)
	if c.Reason != api.JobReasonPodFailurePolicy || !strings.Contains(c.Message, "Container main for pod default/policy-") ||
		!strings.HasSuffix(c.Message, "failed with exit code 42 matching FailJob rule at index 1") {
		t.Errorf("Failed %+v", c)
	}
}

// TestSuspend: a suspended Job makes no pod and says Suspended; resumed,
// it starts, its start time reset.
func TestSuspend(t *testing.T) {
	f := newFixture(t)
	j := newJob("later", 2, 2)
	j.Spec.Suspend = ptrTo(true)
	f.create(j)
	f.sync("later")
	j = f.job("later")
	if len(f.pods()) != 0 || j.Status.StartTime != nil {
		t.Fatalf("suspended: %d pods, %+v", len(f.pods()), j.Status)
	}
	if c := f.condition(j, api.JobSuspended); c.Reason != ReasonJobSuspended {
		t.Errorf("Suspended %+v", c)
	}
	f.clock.Step(time.Minute)
	j = j.DeepCopy()
	j.Spec.Suspend = ptrTo(false)
	if _, err := f.s.Update(f.ctx, j); err != nil {
		t.Fatal(err)
	}
	f.sync("later")
	j = f.job("later")
	if len(f.running()) != 2 || !j.Status.StartTime.Time.Equal(f.clock.Now()) {
		t.Fatalf("resumed: %d pods, %+v", len(f.running()), j.Status)
	}
	if c := j.Condition(api.JobSuspended); c == nil || c.Status != api.ConditionFalse || c.Reason != ReasonJobResumed {
		t.Errorf("Suspended %+v", c)
	}
	// Suspended again: its pods are deleted, and not counted as failed.
	j = j.DeepCopy()
	j.Spec.Suspend = ptrTo(true)
	if _, err := f.s.Update(f.ctx, j); err != nil {
		t.Fatal(err)
	}
	f.sync("later")
	f.sync("later")
	if j = f.job("later"); j.Status.Failed != 0 || len(f.pods()) != 0 || j.Status.Active != 0 {
		t.Errorf("suspended again: %+v, %d pods", j.Status, len(f.pods()))
	}
}

// TestTTLAfterFinished deletes a finished Job once its TTL has run out.
func TestTTLAfterFinished(t *testing.T) {
	f := newFixture(t)
	j := newJob("once", 1, 1)
	j.Spec.TTLSecondsAfterFinished = ptrTo(int32(60))
	f.create(j)
	f.sync("once")
	f.end(f.running()[0], 0)
	if wait := f.sync("once"); wait != 60*time.Second {
		t.Fatalf("looks again in %v, want 60s", wait)
	}
	f.condition(f.job("once"), api.JobComplete)
	f.clock.Step(59 * time.Second)
	f.sync("once")
	f.job("once")
	f.clock.Step(time.Second)
	f.sync("once")
	if _, err := f.s.Get(jobKind, "default", "once"); !store.IsNotFound(err) {
		t.Errorf("job not deleted: %v", err)
	}
}

// TestJobDeleted releases the pods of a deleted Job for the garbage
// collector, and a Job being deleted releases its own.
func TestJobDeleted(t *testing.T) {
	f := newFixture(t)
	f.create(newJob("gone", 2, 2))
	f.sync("gone")
	if _, err := f.s.Delete(f.ctx, jobKind, "default", "gone", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync("gone")
	for _, p := range f.pods() {
		if tracked(p) {
			t.Errorf("pod %s still held", p.Name)
		}
	}

	// Orphaned: the garbage collector drops the ownerReferences first,
	// then the Job goes.
	f.create(newJob("orphaned", 1, 1))
	f.sync("orphaned")
	var p *api.Pod
	for _, q := range f.running() {
		if q.Labels[api.LabelJobName] == "orphaned" {
			p = q.DeepCopy()
		}
	}
	p.OwnerReferences = nil
	if _, err := f.s.Update(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	if keys := f.r.PodKeys(store.Event{Type: store.Modified, Object: p}); len(keys) != 1 || keys[0] != "default/orphaned" {
		t.Fatalf("keys of an orphaned pod: %v", keys)
	}
	if _, err := f.s.Delete(f.ctx, jobKind, "default", "orphaned", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync("orphaned")
	if obj, err := f.s.Get(podKind, "default", p.Name); err != nil || tracked(obj.(*api.Pod)) {
		t.Errorf("orphaned pod: %v, still held", err)
	}

	j := newJob("going", 2, 2)
	j.Finalizers = []string{"foregroundDeletion"}
	f.create(j)
	f.sync("going")
	if _, err := f.s.Delete(f.ctx, jobKind, "default", "going", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync("going")
	for _, p := range f.pods() {
		if tracked(p) {
			t.Errorf("pod %s of a job being deleted still held", p.Name)
		}
	}
}

// TestWorkQueue: a Job without completions stops making pods at the
// first success and completes when the others end.
func TestWorkQueue(t *testing.T) {
	f := newFixture(t)
	f.create(newJob("queue", 0, 3))
	f.sync("queue")
	run := f.running()
	if len(run) != 3 {
		t.Fatalf("%d pods", len(run))
	}
	f.end(run[0], 0)
	f.sync("queue")
	if len(f.running()) != 2 {
		t.Fatalf("%d running after a success", len(f.running()))
	}
	f.end(run[1], 0)
	f.end(run[2], 0)
	f.sync("queue")
	j := f.job("queue")
	if j.Status.Succeeded != 3 {
		t.Fatalf("status %+v", j.Status)
	}
	f.condition(j, api.JobComplete)
}

// TestOnFailureRestarts counts an OnFailure Job's container restarts
// toward backoffLimit.
func TestOnFailureRestarts(t *testing.T) {
	f := newFixture(t)
	j := newJob("restarts", 1, 1)
	j.Spec.Template.Spec.RestartPolicy = api.RestartPolicyOnFailure
	j.Spec.BackoffLimit = ptrTo(int32(2))
	f.create(j)
	f.sync("restarts")
	p := f.running()[0].DeepCopy()
	p.Status.Phase = api.PodRunning
	p.Status.ContainerStatuses = []api.ContainerStatus{{Name: "main", RestartCount: 2}}
	if _, err := f.s.Update(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	f.sync("restarts")
	f.sync("restarts")
	if c := f.condition(f.job("restarts"), api.JobFailed); c.Reason != api.JobReasonBackoffLimitExceeded {
		t.Errorf("Failed %+v", c)
	}
}

// TestBurst ends more pods at once than a pass counts: the pass counts
// a burst, makes no pod while some that ended are left to count, and
// the Job makes exactly its completions.
func TestBurst(t *testing.T) {
	f := newFixture(t)
	const completions, parallelism = 3 * BurstPods, 2 * BurstPods
	f.create(newJob("wide", completions, parallelism))
	f.sync("wide")
	f.sync("wide")
	if run := f.running(); len(run) != parallelism {
		t.Fatalf("%d pods run, want %d", len(run), parallelism)
	}
	for _, p := range f.running() {
		f.end(p, 0)
	}
	if wait := f.sync("wide"); wait != time.Millisecond || len(f.running()) != 0 {
		t.Fatalf("a pass with pods left to count: %d pods made, next in %v", len(f.running()), wait)
	}
	for i := 0; f.job("wide").Condition(api.JobComplete) == nil; i++ {
		if i > 20 {
			t.Fatalf("not complete: %+v", f.job("wide").Status)
		}
		for _, p := range f.running() {
			f.end(p, 0)
		}
		f.sync("wide")
	}
	if pods, j := f.pods(), f.job("wide"); len(pods) != completions || j.Status.Succeeded != completions {
		t.Errorf("%d pods made, succeeded %d, want %d", len(pods), j.Status.Succeeded, completions)
	}
}
