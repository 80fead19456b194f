package main

import (
	"fmt"
	"strings"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

func init() {
	describers["Job"] = describeJob
	describers["CronJob"] = describeCronJob
}

// describeJob prints a Job as kubectl does: its counts and modes, when it
// ran, what its pods did, its template and its conditions.
func describeJob(w *describeWriter, obj api.Object, dc *describeContext) {
	j := obj.(*api.Job)
	w.write(level0, "Name:\t%s\n", j.Name)
	w.write(level0, "Namespace:\t%s\n", j.Namespace)
	w.write(level0, "Selector:\t%s\n", orNone(table.FormatSelector(j.Spec.Selector)))
	describeLabels(w, level0, "Labels", j.Labels)
	describeAnnotations(w, j.Annotations)
	describeControlledBy(w, j)
	w.write(level0, "Parallelism:\t%s\n", int32Text(j.Spec.Parallelism))
	if j.Spec.Completions != nil {
		w.write(level0, "Completions:\t%d\n", *j.Spec.Completions)
	} else {
		w.write(level0, "Completions:\t<unset>\n")
	}
	mode := api.NonIndexedCompletion
	if j.Spec.CompletionMode != nil {
		mode = *j.Spec.CompletionMode
	}
	w.write(level0, "Completion Mode:\t%s\n", mode)
	w.write(level0, "Suspend:\t%t\n", j.Spec.Suspend != nil && *j.Spec.Suspend)
	w.write(level0, "Backoff Limit:\t%s\n", int32Text(j.Spec.BackoffLimit))
	if j.Spec.TTLSecondsAfterFinished != nil {
		w.write(level0, "TTL Seconds After Finished:\t%d\n", *j.Spec.TTLSecondsAfterFinished)
	}
	if j.Status.StartTime != nil {
		w.write(level0, "Start Time:\t%s\n", formatTime(*j.Status.StartTime))
	}
	if j.Status.CompletionTime != nil {
		w.write(level0, "Completed At:\t%s\n", formatTime(*j.Status.CompletionTime))
	}
	if d := table.JobDuration(j, dc.now); d != "" {
		w.write(level0, "Duration:\t%s\n", d)
	}
	if j.Spec.ActiveDeadlineSeconds != nil {
		w.write(level0, "Active Deadline Seconds:\t%ds\n", *j.Spec.ActiveDeadlineSeconds)
	}
	ready := int32(0)
	if j.Status.Ready != nil {
		ready = *j.Status.Ready
	}
	w.write(level0, "Pods Statuses:\t%d Active (%d Ready) / %d Succeeded / %d Failed\n", j.Status.Active, ready, j.Status.Succeeded, j.Status.Failed)
	if mode == api.IndexedCompletion {
		w.write(level0, "Completed Indexes:\t%s\n", orNone(j.Status.CompletedIndexes))
	}
	describePodTemplate(w, &j.Spec.Template)
	if len(j.Status.Conditions) > 0 {
		w.write(level0, "Conditions:\n")
		w.write(level1, "Type\tStatus\tReason\n")
		w.write(level1, "----\t------\t------\n")
		for _, c := range j.Status.Conditions {
			w.write(level1, "%s \t%s\t%s\n", c.Type, c.Status, c.Reason)
		}
	}
}

// describeCronJob prints a CronJob as kubectl does.
func describeCronJob(w *describeWriter, obj api.Object, _ *describeContext) {
	cj := obj.(*api.CronJob)
	s := &cj.Spec
	w.write(level0, "Name:\t%s\n", cj.Name)
	w.write(level0, "Namespace:\t%s\n", cj.Namespace)
	describeLabels(w, level0, "Labels", cj.Labels)
	describeAnnotations(w, cj.Annotations)
	w.write(level0, "Schedule:\t%s\n", s.Schedule)
	if s.TimeZone != nil {
		w.write(level0, "Time Zone:\t%s\n", *s.TimeZone)
	}
	w.write(level0, "Concurrency Policy:\t%s\n", s.ConcurrencyPolicy)
	w.write(level0, "Suspend:\t%s\n", titleBool(s.Suspend != nil && *s.Suspend))
	w.write(level0, "Successful Job History Limit:\t%s\n", int32Text(s.SuccessfulJobsHistoryLimit))
	w.write(level0, "Failed Job History Limit:\t%s\n", int32Text(s.FailedJobsHistoryLimit))
	if s.StartingDeadlineSeconds != nil {
		w.write(level0, "Starting Deadline Seconds:\t%ds\n", *s.StartingDeadlineSeconds)
	} else {
		w.write(level0, "Starting Deadline Seconds:\t<unset>\n")
	}
	js := &s.JobTemplate.Spec
	if js.Selector != nil {
		w.write(level0, "Selector:\t%s\n", table.FormatSelector(js.Selector))
	} else {
		w.write(level0, "Selector:\t<unset>\n")
	}
	w.write(level0, "Parallelism:\t%s\n", int32Text(js.Parallelism))
	w.write(level0, "Completions:\t%s\n", int32Text(js.Completions))
	describePodTemplate(w, &js.Template)
	if t := cj.Status.LastScheduleTime; t != nil {
		w.write(level0, "Last Schedule Time:\t%s\n", formatTime(*t))
	} else {
		w.write(level0, "Last Schedule Time:\t<unset>\n")
	}
	names := make([]string, len(cj.Status.Active))
	for i, r := range cj.Status.Active {
		names[i] = r.Name
	}
	w.write(level0, "Active Jobs:\t%s\n", orNone(strings.Join(names, ", ")))
}

func int32Text(v *int32) string {
	if v == nil {
		return "<unset>"
	}
	return fmt.Sprint(*v)
}

// titleBool is a flag as kubectl's CronJob description writes it.
func titleBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
