package api

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	jobRestartPolicies      = []RestartPolicy{RestartPolicyOnFailure, RestartPolicyNever}
	completionModes         = []CompletionMode{NonIndexedCompletion, IndexedCompletion}
	podReplacementPolicies  = []PodReplacementPolicy{PodReplacementTerminatingOrFailed, PodReplacementFailed}
	podFailurePolicyActions = []PodFailurePolicyAction{PodFailurePolicyActionFailJob, PodFailurePolicyActionFailIndex,
		PodFailurePolicyActionIgnore, PodFailurePolicyActionCount}
	exitCodeOperators   = []PodFailurePolicyOnExitCodesOperator{PodFailurePolicyOnExitCodesOpIn, PodFailurePolicyOnExitCodesOpNotIn}
	concurrencyPolicies = []ConcurrencyPolicy{AllowConcurrent, ForbidConcurrent, ReplaceConcurrent}
)

// Kubernetes' bounds on Jobs and CronJobs.
const (
	// maxParallelismForIndexedJob bounds parallelism of an Indexed Job,
	// whose indexes the controller tracks one by one.
	maxParallelismForIndexedJob = 100000
	// maxCompletionsForPerIndexJob bounds completions with
	// backoffLimitPerIndex.
	maxCompletionsForPerIndexJob = 100000
	maxPodFailurePolicyRules     = 20
	maxExitCodeValues            = 255
	maxPodConditionPatterns      = 20
	maxSuccessPolicyRules        = 20
	// CronJobNameMaxLength leaves room in a CronJob's name for the Job
	// names it makes (NAME-<minutes>), as Kubernetes bounds it.
	CronJobNameMaxLength = 52
)

// CronParser reads a CronJob's schedule as Kubernetes' controller does:
// five fields, or a macro such as @hourly.
var CronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// validateJob checks a Job after defaulting, with Kubernetes' rules: the
// selector is set (the store makes one from the uid unless
// manualSelector) and picks the template.
func validateJob(j *Job, p *field.Path) field.ErrorList {
	errs := validateLabelSelector(j.Spec.Selector, isTrue(j.Spec.ManualSelector), p.Child("selector"))
	return append(errs, validateJobSpec(&j.Spec, p)...)
}

// validateJobSpec checks the counts, the modes and the pod failure and
// success policies of a Job or a CronJob's Job template.
func validateJobSpec(s *JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Parallelism != nil {
		errs = append(errs, validateNonNegative(*s.Parallelism, p.Child("parallelism"))...)
	}
	if s.Completions != nil {
		errs = append(errs, validateNonNegative(*s.Completions, p.Child("completions"))...)
	}
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, validateNonNegative(*s.ActiveDeadlineSeconds, p.Child("activeDeadlineSeconds"))...)
	}
	if s.BackoffLimit != nil {
		errs = append(errs, validateNonNegative(*s.BackoffLimit, p.Child("backoffLimit"))...)
	}
	if s.TTLSecondsAfterFinished != nil {
		errs = append(errs, validateNonNegative(*s.TTLSecondsAfterFinished, p.Child("ttlSecondsAfterFinished"))...)
	}
	if s.CompletionMode != nil {
		errs = append(errs, validateOneOf(*s.CompletionMode, completionModes, p.Child("completionMode"))...)
	}
	if s.PodReplacementPolicy != nil {
		errs = append(errs, validateOneOf(*s.PodReplacementPolicy, podReplacementPolicies, p.Child("podReplacementPolicy"))...)
		if *s.PodReplacementPolicy == PodReplacementTerminatingOrFailed && s.PodFailurePolicy != nil {
			errs = append(errs, field.NotSupported(p.Child("podReplacementPolicy"), *s.PodReplacementPolicy,
				[]PodReplacementPolicy{PodReplacementFailed}))
		}
	}
	indexed := s.CompletionMode != nil && *s.CompletionMode == IndexedCompletion
	if indexed {
		if s.Completions == nil {
			errs = append(errs, field.Required(p.Child("completions"), fmt.Sprintf("when completion mode is %s", IndexedCompletion)))
		}
		if s.Parallelism != nil && *s.Parallelism > maxParallelismForIndexedJob {
			errs = append(errs, field.Invalid(p.Child("parallelism"), *s.Parallelism,
				fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, IndexedCompletion)))
		}
	}
	if s.BackoffLimitPerIndex != nil {
		errs = append(errs, validateNonNegative(*s.BackoffLimitPerIndex, p.Child("backoffLimitPerIndex"))...)
		if !indexed {
			errs = append(errs, field.Forbidden(p.Child("backoffLimitPerIndex"), "requires indexed completion mode"))
		} else if s.Completions != nil && *s.Completions > maxCompletionsForPerIndexJob {
			errs = append(errs, field.Invalid(p.Child("completions"), *s.Completions,
				fmt.Sprintf("must be less than or equal to %d when backoffLimitPerIndex is specified", maxCompletionsForPerIndexJob)))
		}
	}
	if s.MaxFailedIndexes != nil {
		errs = append(errs, validateNonNegative(*s.MaxFailedIndexes, p.Child("maxFailedIndexes"))...)
		if s.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(p.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
		if s.Completions != nil && *s.MaxFailedIndexes > *s.Completions {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "must be less than or equal to completions"))
		}
	}
	if s.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(s, p.Child("podFailurePolicy"))...)
	}
	if s.SuccessPolicy != nil {
		errs = append(errs, validateSuccessPolicy(s, p.Child("successPolicy"))...)
	}
	errs = append(errs, validateTemplateMeta(&s.Template.ObjectMeta, p.Child("template", "metadata"))...)
	if sel := selectorOf(s.Selector); sel != nil && !sel.Empty() && !sel.Matches(labels.Set(s.Template.Labels)) {
		errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), s.Template.Labels, "`selector` does not match template `labels`"))
	}
	return append(errs, validatePodSpec(&s.Template.Spec, p.Child("template", "spec"), jobRestartPolicies)...)
}

func validatePodFailurePolicy(s *JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Template.Spec.RestartPolicy != RestartPolicyNever {
		errs = append(errs, field.Invalid(field.NewPath("spec", "template", "spec", "restartPolicy"), s.Template.Spec.RestartPolicy,
			fmt.Sprintf("only %q is supported when podFailurePolicy is specified", RestartPolicyNever)))
	}
	rules := s.PodFailurePolicy.Rules
	rp := p.Child("rules")
	if len(rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rp, len(rules), maxPodFailurePolicyRules))
	}
	for i, r := range rules {
		ip := rp.Index(i)
		errs = append(errs, validateOneOf(r.Action, podFailurePolicyActions, ip.Child("action"))...)
		if r.Action == PodFailurePolicyActionFailIndex && s.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Forbidden(ip.Child("action"), "requires the backoffLimitPerIndex to be set"))
		}
		switch {
		case r.OnExitCodes != nil && len(r.OnPodConditions) > 0:
			errs = append(errs, field.Invalid(ip, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
		case r.OnExitCodes == nil && len(r.OnPodConditions) == 0:
			errs = append(errs, field.Invalid(ip, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
		}
		if r.OnExitCodes != nil {
			errs = append(errs, validateOnExitCodes(r.OnExitCodes, ip.Child("onExitCodes"))...)
		}
		cp := ip.Child("onPodConditions")
		if len(r.OnPodConditions) > maxPodConditionPatterns {
			errs = append(errs, field.TooMany(cp, len(r.OnPodConditions), maxPodConditionPatterns))
		}
		for j, c := range r.OnPodConditions {
			if c.Type == "" {
				errs = append(errs, field.Required(cp.Index(j).Child("type"), ""))
			}
			errs = append(errs, validateOneOf(c.Status, []ConditionStatus{ConditionTrue, ConditionFalse, ConditionUnknown}, cp.Index(j).Child("status"))...)
		}
	}
	return errs
}

func validateOnExitCodes(r *PodFailurePolicyOnExitCodesRequirement, p *field.Path) field.ErrorList {
	errs := validateOneOf(r.Operator, exitCodeOperators, p.Child("operator"))
	vp := p.Child("values")
	switch {
	case len(r.Values) == 0:
		errs = append(errs, field.Invalid(vp, r.Values, "at least one value is required"))
	case len(r.Values) > maxExitCodeValues:
		errs = append(errs, field.TooMany(vp, len(r.Values), maxExitCodeValues))
	}
	for i, v := range r.Values {
		switch {
		case i > 0 && v == r.Values[i-1]:
			errs = append(errs, field.Duplicate(vp.Index(i), v))
		case i > 0 && v < r.Values[i-1]:
			errs = append(errs, field.Invalid(vp.Index(i), v, "must be ordered"))
		}
		if r.Operator == PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(vp.Index(i), v, "must not be 0 for the In operator"))
		}
	}
	if r.ContainerName != nil {
		errs = append(errs, validateDNSLabel(*r.ContainerName, p.Child("containerName"))...)
	}
	return errs
}

func validateSuccessPolicy(s *JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.CompletionMode == nil || *s.CompletionMode != IndexedCompletion {
		errs = append(errs, field.Invalid(field.NewPath("spec", "completionMode"), s.CompletionMode,
			"requires indexed completion mode"))
	}
	rp := p.Child("rules")
	rules := s.SuccessPolicy.Rules
	switch {
	case len(rules) == 0:
		errs = append(errs, field.Required(rp, "at least one rules must be specified when the successPolicy is specified"))
	case len(rules) > maxSuccessPolicyRules:
		errs = append(errs, field.TooMany(rp, len(rules), maxSuccessPolicyRules))
	}
	for i, r := range rules {
		ip := rp.Index(i)
		if r.SucceededIndexes == nil && r.SucceededCount == nil {
			errs = append(errs, field.Required(ip, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		var total int32 = -1
		if r.SucceededIndexes != nil {
			n, err := ParseIndexes(*r.SucceededIndexes, completionsOr(s))
			if err != nil {
				errs = append(errs, field.Invalid(ip.Child("succeededIndexes"), *r.SucceededIndexes, err.Error()))
			}
			total = int32(n.Len())
		}
		if c := r.SucceededCount; c != nil {
			switch {
			case *c < 0:
				errs = append(errs, field.Invalid(ip.Child("succeededCount"), *c, "must be greater than or equal to 0"))
			case s.Completions != nil && *c > *s.Completions:
				errs = append(errs, field.Invalid(ip.Child("succeededCount"), *c, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", *s.Completions)))
			case total >= 0 && *c > total:
				errs = append(errs, field.Invalid(ip.Child("succeededCount"), *c, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
			}
		}
	}
	return errs
}

func completionsOr(s *JobSpec) int32 {
	if s.Completions == nil {
		return 0
	}
	return *s.Completions
}

// validateCronJob checks a CronJob with Kubernetes' rules: a name that
// leaves room for its Jobs', a schedule cron reads (without TZ=, which
// timeZone replaces), a time zone the control plane knows, and a Job
// template whose selector the store will make.
func validateCronJob(cj *CronJob, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(cj.Name) > CronJobNameMaxLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name,
			fmt.Sprintf("must be no more than %d characters", CronJobNameMaxLength)))
	}
	s := &cj.Spec
	errs = append(errs, validateSchedule(s.Schedule, p.Child("schedule"))...)
	if s.TimeZone != nil {
		errs = append(errs, validateTimeZone(*s.TimeZone, p.Child("timeZone"))...)
	}
	if s.StartingDeadlineSeconds != nil {
		errs = append(errs, validateNonNegative(*s.StartingDeadlineSeconds, p.Child("startingDeadlineSeconds"))...)
	}
	errs = append(errs, validateOneOf(s.ConcurrencyPolicy, concurrencyPolicies, p.Child("concurrencyPolicy"))...)
	if s.SuccessfulJobsHistoryLimit != nil {
		errs = append(errs, validateNonNegative(*s.SuccessfulJobsHistoryLimit, p.Child("successfulJobsHistoryLimit"))...)
	}
	if s.FailedJobsHistoryLimit != nil {
		errs = append(errs, validateNonNegative(*s.FailedJobsHistoryLimit, p.Child("failedJobsHistoryLimit"))...)
	}
	jp := p.Child("jobTemplate")
	errs = append(errs, validateTemplateMeta(&s.JobTemplate.ObjectMeta, jp.Child("metadata"))...)
	js := &s.JobTemplate.Spec
	if js.Selector != nil && !isTrue(js.ManualSelector) {
		errs = append(errs, field.Invalid(jp.Child("spec", "selector"), js.Selector, "`selector` will be auto-generated"))
	}
	return append(errs, validateJobSpec(js, jp.Child("spec"))...)
}

// validateSchedule checks a cron schedule as Kubernetes does.
func validateSchedule(schedule string, p *field.Path) field.ErrorList {
	if schedule == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if strings.Contains(schedule, "TZ") {
		return field.ErrorList{field.Invalid(p, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")}
	}
	if _, err := CronParser.Parse(schedule); err != nil {
		return field.ErrorList{field.Invalid(p, schedule, err.Error())}
	}
	return nil
}

// validateTimeZone checks an IANA time zone name the control plane can
// load.
func validateTimeZone(tz string, p *field.Path) field.ErrorList {
	if tz == "" || strings.EqualFold(tz, "Local") {
		return field.ErrorList{field.Invalid(p, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")}
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return field.ErrorList{field.Invalid(p, tz, strings.TrimPrefix(err.Error(), "time: "))}
	}
	return nil
}

func isTrue(b *bool) bool { return b != nil && *b }

// generatedJobLabels are the labels the store gives a Job's template
// with its selector.
var generatedJobLabels = []string{LabelJobControllerUID, LabelLegacyJobControllerUID, LabelJobName, LabelLegacyJobName}

// validateJobUpdate keeps what Kubernetes keeps of a Job: its selector,
// completion mode and template, which a suspended Job that never started
// may change only in its labels, annotations, node selector, affinity and
// tolerations; and its completions, but for an Indexed Job scaled with
// its parallelism. An update that leaves the selector, or the labels the
// store made with it, out keeps them.
func validateJobUpdate(old, j *Job) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if j.Spec.Selector != nil {
		errs = append(errs, immutable(old.Spec.Selector, j.Spec.Selector, p.Child("selector"))...)
	}
	errs = append(errs, immutable(old.Spec.CompletionMode, j.Spec.CompletionMode, p.Child("completionMode"))...)
	oldT, newT := old.Spec.Template.DeepCopy(), j.Spec.Template.DeepCopy()
	for _, k := range generatedJobLabels {
		if v, ok := oldT.Labels[k]; ok {
			if _, set := newT.Labels[k]; !set {
				if newT.Labels == nil {
					newT.Labels = map[string]string{}
				}
				newT.Labels[k] = v
			}
		}
	}
	if isTrue(old.Spec.Suspend) && old.Status.StartTime == nil {
		for _, t := range []*PodTemplateSpec{oldT, newT} {
			t.Labels, t.Annotations = nil, nil
			t.Spec.NodeSelector, t.Spec.Affinity, t.Spec.Tolerations = nil, nil, nil
		}
	}
	errs = append(errs, immutable(oldT, newT, p.Child("template"))...)
	elastic := j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == IndexedCompletion &&
		j.Spec.Completions != nil && j.Spec.Parallelism != nil && *j.Spec.Completions == *j.Spec.Parallelism &&
		old.Spec.Completions != nil && old.Spec.Parallelism != nil && *old.Spec.Completions == *old.Spec.Parallelism
	if !elastic {
		errs = append(errs, immutable(old.Spec.Completions, j.Spec.Completions, p.Child("completions"))...)
	}
	return errs
}

// +kubebuilder:object:generate=false

// Indexes is a set of completion indexes, kept as sorted, disjoint,
// inclusive intervals, as Kubernetes writes them: "1,3-5,7".
type Indexes [][2]int32

// ParseIndexes reads an index list such as "1,3-5,7"; indexes must be
// below completions when it is positive.
func ParseIndexes(s string, completions int32) (Indexes, error) {
	var out Indexes
	if s == "" {
		return nil, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseInt(lo, 10, 32)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("error parsing %q: cannot convert string to integer for index: %q", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(hi, 10, 32); err != nil || b < 0 {
				return nil, fmt.Errorf("error parsing %q: cannot convert string to integer for index: %q", s, hi)
			}
			if b <= a {
				return nil, fmt.Errorf("error parsing %q: non-increasing order, previous: %d, current: %d", s, a, b)
			}
		}
		if completions > 0 && b >= int64(completions) {
			return nil, fmt.Errorf("error parsing %q: too large index: %d", s, b)
		}
		if n := len(out); n > 0 && int64(out[n-1][1]) >= a {
			return nil, fmt.Errorf("error parsing %q: non-increasing order, previous: %d, current: %d", s, out[n-1][1], a)
		}
		out = append(out, [2]int32{int32(a), int32(b)})
	}
	return out, nil
}

// Len is how many indexes the set holds.
func (x Indexes) Len() int {
	n := 0
	for _, iv := range x {
		n += int(iv[1]-iv[0]) + 1
	}
	return n
}

// Has reports whether i is in the set.
func (x Indexes) Has(i int32) bool {
	k, _ := slices.BinarySearchFunc(x, i, func(iv [2]int32, t int32) int {
		switch {
		case iv[1] < t:
			return -1
		case iv[0] > t:
			return 1
		}
		return 0
	})
	return k < len(x) && x[k][0] <= i && i <= x[k][1]
}

// IndexesOf makes the set of the given indexes.
func IndexesOf(idx []int32) Indexes {
	s := slices.Clone(idx)
	slices.Sort(s)
	s = slices.Compact(s)
	var out Indexes
	for _, i := range s {
		if n := len(out); n > 0 && out[n-1][1]+1 == i {
			out[n-1][1] = i
			continue
		}
		out = append(out, [2]int32{i, i})
	}
	return out
}

// Union is the indexes of both sets.
func (x Indexes) Union(y Indexes) Indexes {
	var all []int32
	for _, s := range []Indexes{x, y} {
		for _, iv := range s {
			for i := iv[0]; i <= iv[1]; i++ {
				all = append(all, i)
			}
		}
	}
	return IndexesOf(all)
}

// String writes the set as Kubernetes does: "1,3-5,7".
func (x Indexes) String() string {
	var b strings.Builder
	for i, iv := range x {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(iv[0])))
		if iv[1] > iv[0] {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(iv[1])))
		}
	}
	return b.String()
}
