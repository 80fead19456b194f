package table

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/berth-dev/berth/api"
)

// The columns of Jobs and CronJobs, as kubectl prints them.
func init() {
	definitions["Job"] = append([]Column{
		nameColumn,
		{Name: "Status", Type: "string", Description: "Status of the job.",
			cell: on(func(j *api.Job, _ time.Time) string { return JobStatus(j) })},
		{Name: "Completions", Type: "string", Description: "The completion status of the job.",
			cell: on(func(j *api.Job, _ time.Time) string { return JobCompletions(j) })},
		{Name: "Duration", Type: "string", Description: "Time required to complete the job.",
			cell: on(func(j *api.Job, now time.Time) string { return JobDuration(j, now) })},
		ageColumn,
	}, templateColumns(
		func(j *api.Job) *api.PodSpec { return &j.Spec.Template.Spec },
		func(j *api.Job) string { return FormatSelector(j.Spec.Selector) },
	)...)
	definitions["CronJob"] = append([]Column{
		nameColumn,
		{Name: "Schedule", Type: "string", Description: "The schedule for running the job.",
			cell: on(func(c *api.CronJob, _ time.Time) string { return c.Spec.Schedule })},
		{Name: "Timezone", Type: "string", Description: "The time zone the schedule is read in.",
			cell: on(func(c *api.CronJob, _ time.Time) string {
				if c.Spec.TimeZone == nil {
					return ""
				}
				return *c.Spec.TimeZone
			})},
		{Name: "Suspend", Type: "boolean", Description: "Whether new runs are stopped.",
			cell: on(func(c *api.CronJob, _ time.Time) string {
				return fmt.Sprint(c.Spec.Suspend != nil && *c.Spec.Suspend)
			})},
		{Name: "Active", Type: "integer", Description: "The number of jobs running now.",
			cell: on(func(c *api.CronJob, _ time.Time) string { return intCell(int32(len(c.Status.Active))) })},
		{Name: "Last Schedule", Type: "string", Description: "When the last job was scheduled.",
			cell: on(func(c *api.CronJob, now time.Time) string {
				if c.Status.LastScheduleTime == nil {
					return ""
				}
				return Age(*c.Status.LastScheduleTime, now)
			})},
		ageColumn,
	}, templateColumns(
		func(c *api.CronJob) *api.PodSpec { return &c.Spec.JobTemplate.Spec.Template.Spec },
		func(c *api.CronJob) string { return FormatSelector(c.Spec.JobTemplate.Spec.Selector) },
	)...)
}

// JobStatus is the STATUS kubectl shows for a Job: its finished
// condition, Terminating, Suspended, its interim condition, or Running.
func JobStatus(j *api.Job) string {
	has := func(t api.JobConditionType) bool {
		c := j.Condition(t)
		return c != nil && c.Status == api.ConditionTrue
	}
	switch {
	case has(api.JobComplete):
		return "Complete"
	case has(api.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(api.JobSuspended):
		return "Suspended"
	case has(api.JobFailureTarget):
		return "FailureTarget"
	case has(api.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

// JobCompletions is kubectl's COMPLETIONS: succeeded/completions, or for a
// work queue "succeeded/1 of parallelism".
func JobCompletions(j *api.Job) string {
	switch {
	case j.Spec.Completions != nil:
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	case j.Spec.Parallelism != nil && *j.Spec.Parallelism > 1:
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *j.Spec.Parallelism)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

// JobDuration is how long the Job ran, or has been running.
func JobDuration(j *api.Job, now time.Time) string {
	switch {
	case j.Status.StartTime == nil:
		return ""
	case j.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	}
	return duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
}
