package apiserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/api/fuzzer"
)

// apiRoundTrips is how many random objects each API round trip tries.
const apiRoundTrips = 40

// TestPodRoundTripAPI creates randomly filled Kubernetes pods, trimmed to
// what berth's validation takes, through the API, and reads them back:
// every field is as it went in once Kubernetes' defaults are applied. A
// random status written through the status subresource reads back whole
// too.
func TestPodRoundTripAPI(t *testing.T) {
	e := newEnv(t)
	for seed := range int64(apiRoundTrips) {
		in := fuzzer.Pod(seed)
		randomStatus := in.Status
		in.Status = corev1.PodStatus{}
		in.Name = fmt.Sprintf("rt-%d", seed)
		want, valid := makeValid(t, seed, in)
		if want == nil {
			continue
		}
		fuzzer.DefaultPod(want)
		path := "/api/v1/namespaces/default/pods"
		mustWrite(t, e, "POST", path, valid, http.StatusCreated)
		var got corev1.Pod
		mustGet(t, e, path+"/"+in.Name, &got)
		want.Status.QOSClass = got.Status.QOSClass // worked out, not defaulted
		compare(t, seed, "pod", want.Spec, got.Spec)
		compare(t, seed, "labels", want.Labels, got.Labels)
		compare(t, seed, "annotations", want.Annotations, got.Annotations)
		compare(t, seed, "status", want.Status, got.Status)

		got.Status = randomStatus
		body, err := json.Marshal(&got)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, e, "PUT", path+"/"+in.Name+"/status", body, http.StatusOK)
		var after corev1.Pod
		mustGet(t, e, path+"/"+in.Name, &after)
		compare(t, seed, "written status", randomStatus, after.Status)
	}
}

// TestPodTemplateRoundTripAPI does the same for the pod templates of
// every workload kind: Deployments, ReplicaSets, StatefulSets,
// DaemonSets, Jobs and CronJobs.
func TestPodTemplateRoundTripAPI(t *testing.T) {
	e := newEnv(t)
	for seed := range int64(apiRoundTrips) {
		var tmpl corev1.PodTemplateSpec
		f := fuzzer.NewFiller(seed)
		f.Fill(&tmpl)
		if len(tmpl.Spec.Containers) == 0 {
			tmpl.Spec.Containers = make([]corev1.Container, 1)
			f.Fill(&tmpl.Spec.Containers[0])
		}
		tmpl.Name, tmpl.Namespace = "", ""
		sel := &metav1.LabelSelector{MatchLabels: tmpl.Labels}
		name := fmt.Sprintf("rt-%d", seed)
		type workload struct {
			path string
			obj  any
			tmpl func(any) *corev1.PodTemplateSpec
		}
		// A Job's and a CronJob's pods must not restart Always.
		batchTmpl := *tmpl.DeepCopy()
		batchTmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		workloads := []workload{
			{"/apis/apps/v1/namespaces/default/deployments", &appsv1.Deployment{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       appsv1.DeploymentSpec{Selector: sel, Template: tmpl},
			}, func(o any) *corev1.PodTemplateSpec { return &o.(*appsv1.Deployment).Spec.Template }},
			{"/apis/apps/v1/namespaces/default/replicasets", &appsv1.ReplicaSet{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       appsv1.ReplicaSetSpec{Selector: sel, Template: tmpl},
			}, func(o any) *corev1.PodTemplateSpec { return &o.(*appsv1.ReplicaSet).Spec.Template }},
			{"/apis/apps/v1/namespaces/default/statefulsets", &appsv1.StatefulSet{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       appsv1.StatefulSetSpec{Selector: sel, Template: tmpl},
			}, func(o any) *corev1.PodTemplateSpec { return &o.(*appsv1.StatefulSet).Spec.Template }},
			{"/apis/apps/v1/namespaces/default/daemonsets", &appsv1.DaemonSet{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       appsv1.DaemonSetSpec{Selector: sel, Template: tmpl},
			}, func(o any) *corev1.PodTemplateSpec { return &o.(*appsv1.DaemonSet).Spec.Template }},
			{"/apis/batch/v1/namespaces/default/cronjobs", &batchv1.CronJob{
				TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: batchv1.CronJobSpec{Schedule: "@hourly", JobTemplate: batchv1.JobTemplateSpec{
					Spec: batchv1.JobSpec{Template: batchTmpl},
				}},
			}, func(o any) *corev1.PodTemplateSpec { return &o.(*batchv1.CronJob).Spec.JobTemplate.Spec.Template }},
			{"/apis/batch/v1/namespaces/default/jobs", &batchv1.Job{
				TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       batchv1.JobSpec{Template: batchTmpl, Suspend: ptr.To(true)},
			}, func(o any) *corev1.PodTemplateSpec {
				// The selector the store makes adds its labels to the
				// template, as Kubernetes' does: left out here.
				t := &o.(*batchv1.Job).Spec.Template
				for _, k := range []string{"batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name", "controller-uid", "job-name"} {
					delete(t.Labels, k)
				}
				if len(t.Labels) == 0 {
					t.Labels = nil
				}
				return t
			}},
		}
		for _, o := range workloads {
			data, err := json.Marshal(o.obj)
			if err != nil {
				t.Fatal(err)
			}
			valid, err := fuzzer.MakeValid(data)
			if err != nil {
				t.Logf("seed %d: %v", seed, err)
				continue
			}
			want := newLike(o.obj)
			if err := json.Unmarshal(valid, want); err != nil {
				t.Fatal(err)
			}
			wt := o.tmpl(want)
			fuzzer.DefaultPodSpec(&wt.Spec)
			mustWrite(t, e, "POST", o.path, valid, http.StatusCreated)
			got := newLike(o.obj)
			mustGet(t, e, o.path+"/"+name, got)
			compare(t, seed, o.path+" template", *wt, *o.tmpl(got))
		}
	}
}

func newLike(o any) any {
	switch o.(type) {
	case *appsv1.Deployment:
		return &appsv1.Deployment{}
	case *appsv1.StatefulSet:
		return &appsv1.StatefulSet{}
	case *appsv1.DaemonSet:
		return &appsv1.DaemonSet{}
	case *batchv1.Job:
		return &batchv1.Job{}
	case *batchv1.CronJob:
		return &batchv1.CronJob{}
	default:
		return &appsv1.ReplicaSet{}
	}
}

// makeValid trims a random pod to what berth takes, or nil when it cannot.
func makeValid(t *testing.T, seed int64, p *corev1.Pod) (*corev1.Pod, []byte) {
	t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	valid, err := fuzzer.MakeValid(data)
	if err != nil {
		t.Logf("seed %d: %v", seed, err)
		return nil, nil
	}
	var out corev1.Pod
	if err := json.Unmarshal(valid, &out); err != nil {
		t.Fatal(err)
	}
	return &out, valid
}

func mustWrite(t *testing.T, e *env, method, path string, body []byte, want int) {
	t.Helper()
	code, _, data := e.do(method, path, adminToken, "application/json", "application/json", bytes.NewReader(body))
	if code != want {
		t.Fatalf("%s %s: %d %s\n%s", method, path, code, data, body)
	}
}

func mustGet(t *testing.T, e *env, path string, out any) {
	t.Helper()
	code, _, data := e.do("GET", path, adminToken, "", "application/json", nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
}

func compare(t *testing.T, seed int64, what string, want, got any) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(want, got) {
		t.Fatalf("seed %d: the %s changed:\n%s", seed, what, diff.Diff(want, got))
	}
}
