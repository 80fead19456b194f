package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +kubebuilder:object:root=true

// Job runs pods until a number of them succeed, as Kubernetes' batch/v1
// Job: the job controller makes the pods, retries failures with back-off
// up to a limit, and reports Complete or Failed.
type Job struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what to run, how many times and how many at once.
	Spec JobSpec `json:"spec,omitempty"`
	// Status is what the job controller counts of the pods; only the
	// status subresource writes it.
	Status JobStatus `json:"status,omitempty"`
}

// CompletionMode says how a Job tells its pods apart.
type CompletionMode string

// Completion modes.
const (
	// NonIndexedCompletion: the Job is complete when completions pods
	// have succeeded, any of them.
	NonIndexedCompletion CompletionMode = "NonIndexed"
	// IndexedCompletion: each pod has an index, 0 to completions-1; the
	// Job is complete when every index has a pod that succeeded.
	IndexedCompletion CompletionMode = "Indexed"
)

// PodReplacementPolicy says when a failed pod is replaced.
type PodReplacementPolicy string

// Pod replacement policies.
const (
	// PodReplacementTerminatingOrFailed replaces a pod as soon as it is
	// being deleted.
	PodReplacementTerminatingOrFailed PodReplacementPolicy = "TerminatingOrFailed"
	// PodReplacementFailed replaces a pod only once it has ended.
	PodReplacementFailed PodReplacementPolicy = "Failed"
)

// JobSpec is the desired state of a Job.
type JobSpec struct {
	// Parallelism is the most pods the Job runs at once, 1 by default.
	Parallelism *int32 `json:"parallelism,omitempty"`
	// Completions is how many pods must succeed; unset, the Job succeeds
	// when any pod has succeeded and the others have ended.
	Completions *int32 `json:"completions,omitempty"`
	// ActiveDeadlineSeconds is how long the Job may run, from its start,
	// before its pods are stopped and it fails with DeadlineExceeded.
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	// PodFailurePolicy decides, by exit code or pod condition, whether a
	// failed pod fails the Job, fails its index, is ignored or counts
	// toward backoffLimit.
	PodFailurePolicy *PodFailurePolicy `json:"podFailurePolicy,omitempty"`
	// SuccessPolicy lets an Indexed Job succeed before every index has.
	SuccessPolicy *SuccessPolicy `json:"successPolicy,omitempty"`
	// BackoffLimit is how many failed pods the Job retries before it
	// fails with BackoffLimitExceeded, 6 by default.
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
	// BackoffLimitPerIndex is, for an Indexed Job, how many times each
	// index is retried before the index fails.
	BackoffLimitPerIndex *int32 `json:"backoffLimitPerIndex,omitempty"`
	// MaxFailedIndexes is how many indexes may fail, with
	// backoffLimitPerIndex, before the Job fails.
	MaxFailedIndexes *int32 `json:"maxFailedIndexes,omitempty"`
	// Selector picks the Job's pods; the server makes one from the Job's
	// uid unless manualSelector is true.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// ManualSelector lets the Job's own selector be used.
	ManualSelector *bool `json:"manualSelector,omitempty"`
	// Template is the pod to run; its restartPolicy is Never or OnFailure.
	Template PodTemplateSpec `json:"template"`
	// TTLSecondsAfterFinished is how long a finished Job is kept before it
	// is deleted with its pods.
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
	// CompletionMode is NonIndexed (the default) or Indexed.
	CompletionMode *CompletionMode `json:"completionMode,omitempty"`
	// Suspend stops the Job: its running pods are deleted and none is made
	// until it is unset.
	Suspend *bool `json:"suspend,omitempty"`
	// PodReplacementPolicy is TerminatingOrFailed (the default) or Failed.
	PodReplacementPolicy *PodReplacementPolicy `json:"podReplacementPolicy,omitempty"`
	// ManagedBy names the controller of the Job; berth's job controller
	// manages only those with none or "kubernetes.io/job-controller".
	ManagedBy *string `json:"managedBy,omitempty"`
}

// JobControllerName is the value of managedBy the built-in controller
// answers to.
const JobControllerName = "kubernetes.io/job-controller"

// PodFailurePolicyAction is what a matching rule does with a failed pod.
type PodFailurePolicyAction string

// Pod failure policy actions.
const (
	PodFailurePolicyActionFailJob   PodFailurePolicyAction = "FailJob"
	PodFailurePolicyActionFailIndex PodFailurePolicyAction = "FailIndex"
	PodFailurePolicyActionIgnore    PodFailurePolicyAction = "Ignore"
	PodFailurePolicyActionCount     PodFailurePolicyAction = "Count"
)

// PodFailurePolicyOnExitCodesOperator is In or NotIn.
type PodFailurePolicyOnExitCodesOperator string

// Exit code operators.
const (
	PodFailurePolicyOnExitCodesOpIn    PodFailurePolicyOnExitCodesOperator = "In"
	PodFailurePolicyOnExitCodesOpNotIn PodFailurePolicyOnExitCodesOperator = "NotIn"
)

// PodFailurePolicy is the ordered rules a failed pod is matched against;
// the first match decides.
type PodFailurePolicy struct {
	// Rules are tried in order.
	// +listType=atomic
	Rules []PodFailurePolicyRule `json:"rules"`
}

// PodFailurePolicyRule matches a failed pod by its containers' exit codes
// or by its conditions.
type PodFailurePolicyRule struct {
	// Action is FailJob, FailIndex, Ignore or Count.
	Action PodFailurePolicyAction `json:"action"`
	// OnExitCodes matches the exit codes of the pod's containers.
	OnExitCodes *PodFailurePolicyOnExitCodesRequirement `json:"onExitCodes,omitempty"`
	// OnPodConditions matches the pod's conditions, such as
	// DisruptionTarget.
	// +listType=atomic
	OnPodConditions []PodFailurePolicyOnPodConditionsPattern `json:"onPodConditions,omitempty"`
}

// PodFailurePolicyOnExitCodesRequirement matches exit codes.
type PodFailurePolicyOnExitCodesRequirement struct {
	// ContainerName restricts the rule to one container.
	ContainerName *string `json:"containerName,omitempty"`
	// Operator is In or NotIn.
	Operator PodFailurePolicyOnExitCodesOperator `json:"operator"`
	// Values are the exit codes, sorted, without duplicates; 0 only with
	// NotIn.
	// +listType=set
	Values []int32 `json:"values"`
}

// PodFailurePolicyOnPodConditionsPattern matches one pod condition.
type PodFailurePolicyOnPodConditionsPattern struct {
	// Type is the condition's type.
	Type PodConditionType `json:"type"`
	// Status is the condition's status, True by default.
	Status ConditionStatus `json:"status,omitempty"`
}

// SuccessPolicy lets an Indexed Job succeed early.
type SuccessPolicy struct {
	// Rules: the Job succeeds when any one is met.
	// +listType=atomic
	Rules []SuccessPolicyRule `json:"rules"`
}

// SuccessPolicyRule is met when the indexes named have succeeded, or
// enough of them.
type SuccessPolicyRule struct {
	// SucceededIndexes is a list of indexes and ranges, as "1,3-5".
	SucceededIndexes *string `json:"succeededIndexes,omitempty"`
	// SucceededCount is how many of them (or of all indexes) must succeed.
	SucceededCount *int32 `json:"succeededCount,omitempty"`
}

// JobStatus reports a Job's pods.
type JobStatus struct {
	// Conditions are Suspended, SuccessCriteriaMet, Complete,
	// FailureTarget and Failed.
	// +listType=atomic
	Conditions []JobCondition `json:"conditions,omitempty"`
	// StartTime is when the Job started (or was last resumed).
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the Job completed.
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Active counts the pods running or pending.
	Active int32 `json:"active,omitempty"`
	// Succeeded counts the pods that succeeded.
	Succeeded int32 `json:"succeeded,omitempty"`
	// Failed counts the pods that failed.
	Failed int32 `json:"failed,omitempty"`
	// Terminating counts the pods being deleted that have not ended.
	Terminating *int32 `json:"terminating,omitempty"`
	// CompletedIndexes lists the succeeded indexes of an Indexed Job, as
	// "1,3-5,7".
	CompletedIndexes string `json:"completedIndexes,omitempty"`
	// FailedIndexes lists the failed indexes, with backoffLimitPerIndex.
	FailedIndexes *string `json:"failedIndexes,omitempty"`
	// UncountedTerminatedPods holds pods that ended and are not counted
	// yet. berth counts a pod and drops its finalizer in one transaction,
	// so it stays empty; it is kept for clients that read it.
	UncountedTerminatedPods *UncountedTerminatedPods `json:"uncountedTerminatedPods,omitempty"`
	// Ready counts the active pods that are ready.
	Ready *int32 `json:"ready,omitempty"`
}

// UncountedTerminatedPods are the uids of ended pods not yet counted.
type UncountedTerminatedPods struct {
	// Succeeded are the uids of succeeded pods.
	// +listType=set
	Succeeded []types.UID `json:"succeeded,omitempty"`
	// Failed are the uids of failed pods.
	// +listType=set
	Failed []types.UID `json:"failed,omitempty"`
}

// JobConditionType is a Job condition's type.
type JobConditionType string

// Job condition types, as Kubernetes names them.
const (
	JobSuspended          JobConditionType = "Suspended"
	JobComplete           JobConditionType = "Complete"
	JobFailed             JobConditionType = "Failed"
	JobFailureTarget      JobConditionType = "FailureTarget"
	JobSuccessCriteriaMet JobConditionType = "SuccessCriteriaMet"
)

// Reasons of the Job conditions, as Kubernetes gives them.
const (
	JobReasonPodFailurePolicy         = "PodFailurePolicy"
	JobReasonBackoffLimitExceeded     = "BackoffLimitExceeded"
	JobReasonDeadlineExceeded         = "DeadlineExceeded"
	JobReasonMaxFailedIndexesExceeded = "MaxFailedIndexesExceeded"
	JobReasonFailedIndexes            = "FailedIndexes"
	JobReasonSuccessPolicy            = "SuccessPolicy"
	JobReasonCompletionsReached       = "CompletionsReached"
)

// JobCondition is one condition of a Job.
type JobCondition struct {
	// Type is the condition's type.
	Type JobConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status ConditionStatus `json:"status"`
	// LastProbeTime is when the condition was last checked.
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// LastTransitionTime is when status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is why, in one CamelCase word.
	Reason string `json:"reason,omitempty"`
	// Message says why in words.
	Message string `json:"message,omitempty"`
}

// The labels and annotations the job controller puts on a Job's pods, as
// Kubernetes names them.
const (
	LabelJobControllerUID       = "batch.kubernetes.io/controller-uid"
	LabelJobName                = "batch.kubernetes.io/job-name"
	LabelLegacyJobControllerUID = "controller-uid"
	LabelLegacyJobName          = "job-name"
	// AnnotationJobCompletionIndex is an Indexed Job's pod's index, as an
	// annotation and a label.
	AnnotationJobCompletionIndex = "batch.kubernetes.io/job-completion-index"
	// AnnotationJobIndexFailureCount counts the failures of the pod's
	// index so far, with backoffLimitPerIndex.
	AnnotationJobIndexFailureCount = "batch.kubernetes.io/job-index-failure-count"
	// FinalizerJobTracking holds a Job's pod until the job controller has
	// counted it.
	FinalizerJobTracking = "batch.kubernetes.io/job-tracking"
	// AnnotationCronJobScheduledTimestamp is the time a CronJob's Job was
	// scheduled for, RFC 3339.
	AnnotationCronJobScheduledTimestamp = "batch.kubernetes.io/cronjob-scheduled-timestamp"
	// AnnotationCronJobInstantiate is "manual" on a Job made from a
	// CronJob by `kubectl create job --from`.
	AnnotationCronJobInstantiate = "cronjob.kubernetes.io/instantiate"
	// EnvJobCompletionIndex is the variable an Indexed Job's containers
	// read their index from.
	EnvJobCompletionIndex = "JOB_COMPLETION_INDEX"
)

// +kubebuilder:object:root=true

// CronJob makes a Job on a cron schedule, as Kubernetes' batch/v1
// CronJob.
type CronJob struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the schedule and the Job to make.
	Spec CronJobSpec `json:"spec,omitempty"`
	// Status is what the cronjob controller reports of its Jobs.
	Status CronJobStatus `json:"status,omitempty"`
}

// ConcurrencyPolicy says what a CronJob does when a run is due while
// another is active.
type ConcurrencyPolicy string

// Concurrency policies.
const (
	AllowConcurrent   ConcurrencyPolicy = "Allow"
	ForbidConcurrent  ConcurrencyPolicy = "Forbid"
	ReplaceConcurrent ConcurrencyPolicy = "Replace"
)

// CronJobSpec is the desired state of a CronJob.
type CronJobSpec struct {
	// Schedule is a cron schedule of five fields, or a macro such as
	// @hourly.
	Schedule string `json:"schedule"`
	// TimeZone is the IANA time zone the schedule is read in; the
	// control plane's by default.
	TimeZone *string `json:"timeZone,omitempty"`
	// StartingDeadlineSeconds is how late a run may start; a run missed by
	// more is skipped.
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`
	// ConcurrencyPolicy is Allow (the default), Forbid or Replace.
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`
	// Suspend stops new runs; running Jobs go on.
	Suspend *bool `json:"suspend,omitempty"`
	// JobTemplate is the Job each run makes.
	JobTemplate JobTemplateSpec `json:"jobTemplate"`
	// SuccessfulJobsHistoryLimit is how many completed Jobs are kept, 3
	// by default.
	SuccessfulJobsHistoryLimit *int32 `json:"successfulJobsHistoryLimit,omitempty"`
	// FailedJobsHistoryLimit is how many failed Jobs are kept, 1 by
	// default.
	FailedJobsHistoryLimit *int32 `json:"failedJobsHistoryLimit,omitempty"`
}

// JobTemplateSpec is the Job a CronJob makes.
type JobTemplateSpec struct {
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the Job's spec.
	Spec JobSpec `json:"spec,omitempty"`
}

// CronJobStatus reports a CronJob's runs.
type CronJobStatus struct {
	// Active are the Jobs running now.
	// +listType=atomic
	Active []ObjectReference `json:"active,omitempty"`
	// LastScheduleTime is when a Job was last scheduled.
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastSuccessfulTime is when a Job last completed.
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`
}

// JobFinished returns the Complete or Failed condition of a finished Job,
// or nil while it runs.
func JobFinished(j *Job) *JobCondition {
	for i := range j.Status.Conditions {
		c := &j.Status.Conditions[i]
		if (c.Type == JobComplete || c.Type == JobFailed) && c.Status == ConditionTrue {
			return c
		}
	}
	return nil
}

// JobCondition returns the Job's condition of type t, or nil.
func (j *Job) Condition(t JobConditionType) *JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == t {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}
