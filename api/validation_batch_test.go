package api

import (
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestValidateBadBatch reads the bad Jobs and CronJobs and checks that
// each mistake is reported at its field, in Kubernetes' words.
func TestValidateBadBatch(t *testing.T) {
	data, err := os.ReadFile("testdata/manifests/bad/batch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, errs := DecodeStream("batch.yaml", data, DecodeOptions{DropStatus: true})
	if len(errs) > 0 {
		t.Fatalf("decode: %v", errs)
	}
	var got []string
	for _, d := range objs {
		for _, e := range d.DefaultAndValidate() {
			got = append(got, e.Error())
		}
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		`doc 0 (line 6): spec.parallelism: Invalid value: -1: must be greater than or equal to 0`,
		`spec.completions: Required value: when completion mode is Indexed`,
		`spec.podFailurePolicy.rules[0].action: Unsupported value: "Retry"`,
		`spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must be ordered`,
		`spec.template.spec.restartPolicy: Invalid value: "Always": only "Never" is supported when podFailurePolicy is specified`,
		`spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`,
		`spec.schedule: Invalid value: "CRON_TZ=UTC * * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`,
		`spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`,
		`spec.concurrencyPolicy: Unsupported value: "Sometimes"`,
		"spec.jobTemplate.spec.selector: Invalid value: ",
		"`selector` will be auto-generated",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no error %q in\n%s", want, all)
		}
	}
}

func TestValidateCronJobName(t *testing.T) {
	cj := &CronJob{}
	cj.Name, cj.Namespace = strings.Repeat("a", 53), "default"
	cj.Spec.Schedule = "@hourly"
	cj.Spec.JobTemplate.Spec.Template.Spec = PodSpec{Containers: []Container{{Name: "main", Image: "busybox"}}, RestartPolicy: RestartPolicyNever}
	Default(cj)
	errs := Validate(cj)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "must be no more than 52 characters") {
		t.Errorf("errors %v", errs)
	}
	cj.Name = "nightly"
	for _, s := range []string{"@hourly", "@daily", "@weekly", "*/5 * * * *", "0 3 * * 1-5", "@every 1h", "61 * * * *", "* * *"} {
		cj.Spec.Schedule = s
		errs := Validate(cj)
		if ok := len(errs) == 0; ok != !strings.HasPrefix(s, "61") && s != "* * *" {
			t.Errorf("schedule %q: %v", s, errs)
		}
	}
}

func TestDefaultJob(t *testing.T) {
	j := &Job{Spec: JobSpec{PodFailurePolicy: &PodFailurePolicy{Rules: []PodFailurePolicyRule{{Action: PodFailurePolicyActionIgnore,
		OnPodConditions: []PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget"}}}}}}}
	Default(j)
	s := j.Spec
	if *s.Completions != 1 || *s.Parallelism != 1 || *s.BackoffLimit != 6 || *s.CompletionMode != NonIndexedCompletion ||
		*s.Suspend || *s.PodReplacementPolicy != PodReplacementFailed || s.PodFailurePolicy.Rules[0].OnPodConditions[0].Status != ConditionTrue {
		t.Errorf("defaults %+v", s)
	}
	j = &Job{Spec: JobSpec{Parallelism: ptrTo(int32(3)), BackoffLimitPerIndex: ptrTo(int32(1))}}
	Default(j)
	if j.Spec.Completions != nil || *j.Spec.BackoffLimit != 1<<31-1 || *j.Spec.PodReplacementPolicy != PodReplacementTerminatingOrFailed {
		t.Errorf("defaults %+v", j.Spec)
	}
}

func TestIndexes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		err  string
	}{
		{"", "", ""},
		{"1,3-5,7", "1,3-5,7", ""},
		{"0-2", "0-2", ""},
		{"3,1", "", "non-increasing order"},
		{"1-1", "", "non-increasing order"},
		{"a", "", "cannot convert"},
		{"9", "", "too large index"},
	} {
		x, err := ParseIndexes(tc.in, 8)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || x.String() != tc.want {
			t.Errorf("%q: %q, %v", tc.in, x.String(), err)
		}
	}
	x := IndexesOf([]int32{5, 1, 2, 3, 9, 2})
	if x.String() != "1-3,5,9" || !x.Has(2) || x.Has(4) || !x.Has(9) || x.Len() != 5 {
		t.Errorf("IndexesOf: %s", x)
	}
	if u := x.Union(IndexesOf([]int32{4, 10})); u.String() != "1-5,9-10" {
		t.Errorf("Union: %s", u)
	}
}

// FuzzParseIndexes feeds the index lists of successPolicy and a Job's
// status arbitrary text: never a panic, and what it accepts is written
// in a form that reads back the same, every index in range.
func FuzzParseIndexes(f *testing.F) {
	for _, s := range []string{"", "0", "1,3-5,7", "0-9999", "3,1", "1-1", "a", "-1", "1--2", ",", "2147483647", "0-2147483647"} {
		f.Add(s, int32(10))
	}
	f.Fuzz(func(t *testing.T, s string, completions int32) {
		x, err := ParseIndexes(s, completions)
		if err != nil {
			return
		}
		again, err := ParseIndexes(x.String(), completions)
		if err != nil || again.String() != x.String() {
			t.Fatalf("%q written as %q reads back as %q (%v)", s, x.String(), again.String(), err)
		}
		for _, iv := range x {
			if iv[0] < 0 || iv[1] < iv[0] || (completions > 0 && iv[1] >= completions) {
				t.Fatalf("%q: interval %v out of range", s, iv)
			}
		}
	})
}

// TestValidateJobUpdate keeps a Job's selector, template and
// completions, as Kubernetes does, but lets an update leave out what
// the store made.
func TestValidateJobUpdate(t *testing.T) {
	old := &Job{}
	old.Name, old.Namespace = "j", "default"
	old.Spec.Completions = ptrTo(int32(3))
	old.Spec.Template.Labels = map[string]string{"app": "j", LabelJobControllerUID: "u", LabelJobName: "j"}
	old.Spec.Template.Spec = PodSpec{RestartPolicy: RestartPolicyNever, Containers: []Container{{Name: "main", Image: "busybox"}}}
	Default(old)
	old.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{LabelJobControllerUID: "u"}}
	applied := func(f func(*Job)) *Job {
		j := old.DeepCopy()
		j.Spec.Selector = nil
		j.Spec.Template.Labels = map[string]string{"app": "j"}
		f(j)
		return j
	}
	for _, tc := range []struct {
		name string
		j    *Job
		want string
	}{
		{"as applied", applied(func(*Job) {}), ""},
		{"parallelism", applied(func(j *Job) { j.Spec.Parallelism = ptrTo(int32(5)) }), ""},
		{"image", applied(func(j *Job) { j.Spec.Template.Spec.Containers[0].Image = "busybox:2" }), "spec.template: Invalid value"},
		{"completions", applied(func(j *Job) { j.Spec.Completions = ptrTo(int32(4)) }), "spec.completions: Invalid value: 4: field is immutable"},
		{"selector", applied(func(j *Job) {
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}), "spec.selector: Invalid value"},
	} {
		errs := ValidateUpdate(old, tc.j)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s: %v", tc.name, errs)
		case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, errs, tc.want)
		}
	}
	// Suspended and never started: scheduling may change.
	old.Spec.Suspend = ptrTo(true)
	j := applied(func(j *Job) { j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"} })
	if errs := ValidateUpdate(old, j); len(errs) > 0 {
		t.Errorf("suspended: %v", errs)
	}
}
