package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

func deployment(gen, observed int64, replicas int32, st api.DeploymentStatus) *api.Deployment {
	d := &api.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: gen}}
	d.Spec.Replicas = &replicas
	d.Status = st
	d.Status.ObservedGeneration = observed
	return d
}

func TestRolloutStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    *api.Deployment
		msg  string
		done bool
		fail bool
	}{
		{"not observed", deployment(2, 1, 3, api.DeploymentStatus{}), "Waiting for deployment spec update to be observed...", false, false},
		{"updating", deployment(2, 2, 3, api.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1}), `Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated...`, false, false},
		{"old pending", deployment(2, 2, 3, api.DeploymentStatus{Replicas: 4, UpdatedReplicas: 3}), `Waiting for deployment "web" rollout to finish: 1 old replicas are pending termination...`, false, false},
		{"unavailable", deployment(2, 2, 3, api.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2}), `Waiting for deployment "web" rollout to finish: 2 of 3 updated replicas are available...`, false, false},
		{"done", deployment(2, 2, 3, api.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3}), `deployment "web" successfully rolled out`, true, false},
		{"scaled to zero", deployment(1, 1, 0, api.DeploymentStatus{}), `deployment "web" successfully rolled out`, true, false},
		{"deadline", deployment(2, 2, 3, api.DeploymentStatus{Conditions: []api.WorkloadCondition{{Type: api.DeploymentProgressing, Status: api.ConditionFalse, Reason: reasonProgressDeadlineExceeded}}}), "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, done, err := rolloutStatus(tc.d)
			if (err != nil) != tc.fail || (err != nil && !errors.Is(err, errRolloutFailed)) {
				t.Fatalf("err = %v, want failure %v", err, tc.fail)
			}
			if msg != tc.msg || done != tc.done {
				t.Errorf("got (%q, %v), want (%q, %v)", msg, done, tc.msg, tc.done)
			}
		})
	}
}

func replicaSet(rev int64, image string) *api.ReplicaSet {
	rs := &api.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", rev)}}
	if rev > 0 {
		rs.Annotations = map[string]string{api.AnnotationDeploymentRevision: fmt.Sprint(rev)}
	}
	rs.Spec.Template.Labels = map[string]string{"app": "web", api.LabelPodTemplateHash: fmt.Sprint(rev)}
	rs.Spec.Template.Spec.Containers = []api.Container{{Name: "c", Image: image}}
	return rs
}

func TestRollbackTemplate(t *testing.T) {
	d := deployment(3, 3, 1, api.DeploymentStatus{})
	d.Spec.Template = *replicaSet(3, "v3").Spec.Template.DeepCopy()
	delete(d.Spec.Template.Labels, api.LabelPodTemplateHash)
	rss := []*api.ReplicaSet{replicaSet(1, "v1"), replicaSet(3, "v3"), replicaSet(2, "v2"), replicaSet(0, "stray")}
	template := func(toRevision int64) (*api.PodTemplateSpec, int64, error) {
		target, rev, err := rollbackTarget(d, rss, toRevision)
		if err != nil {
			return nil, 0, err
		}
		return rollbackTemplate(d, target), rev, nil
	}

	tmpl, rev, err := template(0)
	if err != nil || rev != 2 || tmpl == nil || tmpl.Spec.Containers[0].Image != "v2" {
		t.Fatalf("previous: %v %d %+v", err, rev, tmpl)
	}
	if _, ok := tmpl.Labels[api.LabelPodTemplateHash]; ok || tmpl.Labels["app"] != "web" {
		t.Errorf("labels %v: want the template's own, without the hash", tmpl.Labels)
	}
	if tmpl, rev, err := template(1); err != nil || rev != 1 || tmpl.Spec.Containers[0].Image != "v1" {
		t.Errorf("to revision 1: %v %d %+v", err, rev, tmpl)
	}
	if tmpl, rev, err := template(3); err != nil || rev != 3 || tmpl != nil {
		t.Errorf("to the current revision: %v %d %+v, want a skip", err, rev, tmpl)
	}
	if _, _, err := template(9); err == nil || !strings.Contains(err.Error(), "revision 9") {
		t.Errorf("unknown revision: %v", err)
	}
	if _, _, err := rollbackTarget(d, rss[1:2], 0); err == nil || !strings.Contains(err.Error(), "no rollout history") {
		t.Errorf("one revision: %v", err)
	}
}

// TestRollbackAnnotations: the Deployment keeps its own annotations and
// takes the others from the ReplicaSet it goes back to, as kubectl's undo.
func TestRollbackAnnotations(t *testing.T) {
	d := deployment(3, 3, 1, api.DeploymentStatus{})
	d.Annotations = map[string]string{
		api.AnnotationDeploymentRevision: "3",
		api.AnnotationLastAppliedConfig:  "{}",
		api.AnnotationSource:             "api",
		"kubernetes.io/change-cause":     "set image v3",
		"team":                           "web",
	}
	target := replicaSet(1, "v1")
	target.Annotations["kubernetes.io/change-cause"] = "create v1"
	target.Annotations[api.AnnotationDesiredReplicas] = "1"
	got := rollbackAnnotations(d, target)
	want := map[string]any{"kubernetes.io/change-cause": "create v1", "team": nil}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("annotations patch %v, want %v", got, want)
	}
}

func webDeployment(value string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {kubernetes.io/change-cause: "version ` + value + `"}
spec:
  replicas: 0
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: web
        command: [sleep, "1000"]
        env:
        - {name: VERSION, value: "` + value + `"}
`
}

func TestRolloutUndoAndStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	kubeconfig := startSourcedControlPlane(t)
	dir := t.TempDir()
	berth := func(args ...string) result {
		t.Helper()
		return runBerth(t, "", append(args, "--kubeconfig", kubeconfig)...)
	}
	get := func() api.Deployment {
		r := berth("get", "deploy", "web", "-o", "json")
		var d api.Deployment
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatalf("get deploy/web: %v\n%s", err, r.stderr)
		}
		return d
	}
	envOf := func() string { return get().Spec.Template.Spec.Containers[0].Env[0].Value }
	manifest := filepath.Join(dir, "web.yaml")
	for _, v := range []string{"1", "2"} {
		writeFile(t, manifest, webDeployment(v))
		if r := berth("apply", "-f", manifest); r.code != exitOK {
			t.Fatalf("apply %s: %s", v, r.stderr)
		}
		if r := berth("rollout", "status", "deploy/web", "--timeout", "30s"); r.code != exitOK || !strings.Contains(r.stdout, `deployment "web" successfully rolled out`) {
			t.Fatalf("status after %s: exit %d\n%s%s", v, r.code, r.stdout, r.stderr)
		}
	}
	waitReady(t, func() bool {
		r := berth("get", "rs", "-o", "name")
		return r.code == exitOK && strings.Count(r.stdout, "\n") == 2
	})
	r := berth("rollout", "undo", "deploy/web")
	if r.code != exitOK || r.stdout != "deployment.apps/web rolled back\n" || r.stderr != "" {
		t.Fatalf("undo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := envOf(); got != "1" {
		t.Errorf("template after undo: %s", got)
	}
	if got := get().Annotations["kubernetes.io/change-cause"]; got != "version 1" {
		t.Errorf("change-cause after undo %q, want the first revision's", got)
	}
	if r := berth("rollout", "status", "deployment", "web", "--timeout", "30s"); r.code != exitOK {
		t.Errorf("status after undo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := berth("rollout", "undo", "deploy/web", "--to-revision", "99"); r.code != exitFailure || !strings.Contains(r.stderr, "revision 99") {
		t.Errorf("undo to a missing revision: exit %d\n%s", r.code, r.stderr)
	}
	if r := berth("rollout", "status", "svc/web"); r.code != exitUsage {
		t.Errorf("rollout of a service: exit %d", r.code)
	}
}

func TestRolloutUndoWarnsUnderASource(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "web.yaml"), webDeployment("1"))
	kubeconfig := startSourcedControlPlane(t, "name=site,"+dir)
	berth := func(args ...string) result {
		t.Helper()
		return runBerth(t, "", append(args, "--kubeconfig", kubeconfig)...)
	}
	if r := berth("reconcile", "source", "site"); r.code != exitOK {
		t.Fatalf("sync: %s", r.stderr)
	}
	writeFile(t, filepath.Join(dir, "web.yaml"), webDeployment("2"))
	if r := berth("reconcile", "source", "site"); r.code != exitOK {
		t.Fatalf("sync: %s", r.stderr)
	}
	waitReady(t, func() bool {
		r := berth("get", "rs", "-o", "name")
		return r.code == exitOK && strings.Count(r.stdout, "\n") == 2
	})
	r := berth("rollout", "undo", "deploy/web")
	if r.code != exitOK || !strings.Contains(r.stderr, "Warning: deployment.apps/web is applied from source site") {
		t.Errorf("undo under a source: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
