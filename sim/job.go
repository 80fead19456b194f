package sim

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var jobKind = api.KindOf(&api.Job{})

// jobName is the Job of the job scenario.
const jobName = "batch"

// runJob runs the job scenario on running agents: a Job of o.Pods
// completions, o.Parallelism at a time, written to the store, until it
// is Complete. The hollow agents end each of its pods Succeeded as soon
// as it is bound: the run measures the control plane making, binding,
// counting and releasing the pods.
func runJob(ctx context.Context, st *store.Store, o *Options, progressf func(string, ...any)) (*Result, error) {
	completions, parallelism := int32(o.Pods), int32(o.Parallelism)
	tmpl := makePod(0, metav1.OwnerReference{Name: jobName}, o)
	j := &api.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: jobName},
		Spec: api.JobSpec{
			Completions: &completions,
			Parallelism: &parallelism,
			Template:    api.PodTemplateSpec{Spec: tmpl.Spec},
		},
	}
	j.Spec.Template.Spec.RestartPolicy = api.RestartPolicyNever
	api.Default(j)
	res := &Result{Nodes: o.Nodes, Pods: o.Pods, scenario: ScenarioJob}
	start := time.Now()
	if _, err := st.Create(ctx, j); err != nil {
		return res, fmt.Errorf("sim: create job: %w", err)
	}
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	lastProgress := time.Now()
	for {
		obj, err := st.Get(jobKind, "default", jobName)
		if err != nil {
			return res, fmt.Errorf("sim: get job: %w", err)
		}
		s := obj.(*api.Job).Status
		res.Running = int(s.Active)
		res.Scheduled = int(s.Succeeded)
		if c := api.JobFinished(obj.(*api.Job)); c != nil {
			res.CompleteSeconds = round(time.Since(start).Seconds(), 3)
			if res.CompleteSeconds > 0 {
				res.PodsPerSecond = round(float64(s.Succeeded)/res.CompleteSeconds, 1)
			}
			if c.Type != api.JobComplete {
				return res, fmt.Errorf("sim: job %s: %s: %s", c.Type, c.Reason, c.Message)
			}
			return res, nil
		}
		if time.Since(lastProgress) >= time.Second {
			lastProgress = time.Now()
			progressf("job %s: active %d succeeded %d failed %d", jobName, s.Active, s.Succeeded, s.Failed)
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("sim: job: %w", ctx.Err())
		case <-poll.C:
		}
	}
}
