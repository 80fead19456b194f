package main

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// fixtureJobs are a Job that completed, one running, one that failed and
// an Indexed one suspended.
func fixtureJobs() []api.Object {
	sel := func(uid string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{api.LabelJobControllerUID: uid}}
	}
	tmpl := fixtureTemplate("migrate", "busybox:1.36")
	tmpl.Spec.RestartPolicy = api.RestartPolicyNever
	done := &api.Job{ObjectMeta: meta("default", "migrate", 2*time.Hour, map[string]string{"app": "migrate"})}
	done.Spec = api.JobSpec{Completions: ptr(int32(5)), Parallelism: ptr(int32(2)), BackoffLimit: ptr(int32(6)),
		CompletionMode: ptr(api.NonIndexedCompletion), Suspend: ptr(false), Selector: sel("uid-default-migrate"), Template: tmpl}
	done.Status = api.JobStatus{Succeeded: 5, StartTime: agoPtr(2 * time.Hour), CompletionTime: agoPtr(2*time.Hour - 95*time.Second),
		Conditions: []api.JobCondition{
			{Type: api.JobSuccessCriteriaMet, Status: api.ConditionTrue, Reason: api.JobReasonCompletionsReached},
			{Type: api.JobComplete, Status: api.ConditionTrue, Reason: api.JobReasonCompletionsReached},
		}}
	running := &api.Job{ObjectMeta: meta("default", "queue", 5*time.Minute, nil)}
	running.Spec = api.JobSpec{Parallelism: ptr(int32(3)), BackoffLimit: ptr(int32(6)), Selector: sel("uid-default-queue"), Template: tmpl}
	running.Status = api.JobStatus{Active: 3, Ready: ptr(int32(2)), Succeeded: 1, StartTime: agoPtr(5 * time.Minute)}
	failed := &api.Job{ObjectMeta: meta("default", "flaky", time.Hour, nil)}
	failed.Spec = api.JobSpec{Completions: ptr(int32(1)), Parallelism: ptr(int32(1)), BackoffLimit: ptr(int32(2)),
		ActiveDeadlineSeconds: ptr(int64(600)), Selector: sel("uid-default-flaky"), Template: tmpl}
	failed.Status = api.JobStatus{Failed: 3, StartTime: agoPtr(time.Hour), Conditions: []api.JobCondition{
		{Type: api.JobFailureTarget, Status: api.ConditionTrue, Reason: api.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit"},
		{Type: api.JobFailed, Status: api.ConditionTrue, Reason: api.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit"},
	}}
	indexed := &api.Job{ObjectMeta: meta("default", "shards", 10*time.Minute, nil)}
	indexed.Spec = api.JobSpec{Completions: ptr(int32(8)), Parallelism: ptr(int32(4)), CompletionMode: ptr(api.IndexedCompletion),
		Suspend: ptr(true), TTLSecondsAfterFinished: ptr(int32(300)), Selector: sel("uid-default-shards"), Template: tmpl}
	indexed.Status = api.JobStatus{Succeeded: 3, CompletedIndexes: "0-1,5", Conditions: []api.JobCondition{
		{Type: api.JobSuspended, Status: api.ConditionTrue, Reason: "JobSuspended", Message: "Job suspended"},
	}}
	return []api.Object{done, failed, running, indexed}
}

// fixtureCronJobs are a CronJob that ran a minute ago with one Job
// active, and a suspended one in a time zone that never ran.
func fixtureCronJobs() []api.Object {
	tmpl := fixtureTemplate("backup", "busybox:1.36")
	tmpl.Spec.RestartPolicy = api.RestartPolicyOnFailure
	backup := &api.CronJob{ObjectMeta: meta("default", "backup", 3*day, nil)}
	backup.Spec = api.CronJobSpec{Schedule: "*/5 * * * *", ConcurrencyPolicy: api.ForbidConcurrent, Suspend: ptr(false),
		SuccessfulJobsHistoryLimit: ptr(int32(3)), FailedJobsHistoryLimit: ptr(int32(1)),
		JobTemplate: api.JobTemplateSpec{Spec: api.JobSpec{Template: tmpl}}}
	backup.Status = api.CronJobStatus{LastScheduleTime: agoPtr(time.Minute), LastSuccessfulTime: agoPtr(6 * time.Minute),
		Active: []api.ObjectReference{{Kind: "Job", Namespace: "default", Name: "backup-29541235", APIVersion: "batch/v1"}}}
	report := &api.CronJob{ObjectMeta: meta("default", "report", time.Hour, nil)}
	report.Spec = api.CronJobSpec{Schedule: "@daily", TimeZone: ptr("Europe/Paris"), ConcurrencyPolicy: api.AllowConcurrent,
		Suspend: ptr(true), StartingDeadlineSeconds: ptr(int64(300)), SuccessfulJobsHistoryLimit: ptr(int32(1)), FailedJobsHistoryLimit: ptr(int32(1)),
		JobTemplate: api.JobTemplateSpec{Spec: api.JobSpec{Completions: ptr(int32(2)), Parallelism: ptr(int32(2)), Template: tmpl}}}
	return []api.Object{backup, report}
}
