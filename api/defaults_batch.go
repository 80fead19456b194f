package api

import "math"

// The defaults of a CronJob's history, as Kubernetes gives them.
const (
	DefaultSuccessfulJobsHistoryLimit int32 = 3
	DefaultFailedJobsHistoryLimit     int32 = 1
	DefaultBackoffLimit               int32 = 6
)

// defaultJobSpec gives a Job's spec Kubernetes' defaults: one pod at a
// time, one completion when neither is set, a backoffLimit of 6 (none
// with backoffLimitPerIndex), NonIndexed, not suspended, and pods
// replaced when they end if a pod failure policy reads how they ended.
func defaultJobSpec(s *JobSpec) {
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = ptrTo(int32(1))
	}
	if s.Parallelism == nil {
		s.Parallelism = ptrTo(int32(1))
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = ptrTo(int32(math.MaxInt32))
		} else {
			s.BackoffLimit = ptrTo(DefaultBackoffLimit)
		}
	}
	if s.CompletionMode == nil {
		s.CompletionMode = ptrTo(NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = ptrTo(false)
	}
	if s.PodReplacementPolicy == nil {
		if s.PodFailurePolicy != nil {
			s.PodReplacementPolicy = ptrTo(PodReplacementFailed)
		} else {
			s.PodReplacementPolicy = ptrTo(PodReplacementTerminatingOrFailed)
		}
	}
	if s.PodFailurePolicy != nil {
		for i := range s.PodFailurePolicy.Rules {
			for j := range s.PodFailurePolicy.Rules[i].OnPodConditions {
				if c := &s.PodFailurePolicy.Rules[i].OnPodConditions[j]; c.Status == "" {
					c.Status = ConditionTrue
				}
			}
		}
	}
	defaultPodSpec(&s.Template.Spec)
}

// defaultCronJob gives a CronJob Kubernetes' defaults: Allow, not
// suspended, 3 successful and 1 failed Job kept; the Job template's pod
// is defaulted as a pod is.
func defaultCronJob(cj *CronJob) {
	s := &cj.Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = AllowConcurrent
	}
	if s.Suspend == nil {
		s.Suspend = ptrTo(false)
	}
	if s.SuccessfulJobsHistoryLimit == nil {
		s.SuccessfulJobsHistoryLimit = ptrTo(DefaultSuccessfulJobsHistoryLimit)
	}
	if s.FailedJobsHistoryLimit == nil {
		s.FailedJobsHistoryLimit = ptrTo(DefaultFailedJobsHistoryLimit)
	}
	defaultPodSpec(&s.JobTemplate.Spec.Template.Spec)
}

func ptrTo[T any](v T) *T { return &v }
