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

func statefulSet(gen, observed int64, replicas int32, partition *int32, st api.StatefulSetStatus) *api.StatefulSet {
	s := &api.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: gen}}
	s.Spec.Replicas = &replicas
	s.Spec.UpdateStrategy.Type = api.RollingUpdateStatefulSetStrategyType
	if partition != nil {
		s.Spec.UpdateStrategy.RollingUpdate = &api.RollingUpdateStatefulSetStrategy{Partition: partition}
	}
	s.Status = st
	s.Status.ObservedGeneration = observed
	return s
}

func daemonSet(gen, observed int64, st api.DaemonSetStatus) *api.DaemonSet {
	d := &api.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "logs", Generation: gen}}
	d.Spec.UpdateStrategy.Type = api.RollingUpdateDaemonSetStrategyType
	d.Status = st
	d.Status.ObservedGeneration = observed
	return d
}

// TestRolloutStatusOfSets: StatefulSets and DaemonSets read as kubectl's
// status viewers read them.
func TestRolloutStatusOfSets(t *testing.T) {
	one := int32(1)
	onDelete := statefulSet(1, 1, 3, nil, api.StatefulSetStatus{})
	onDelete.Spec.UpdateStrategy.Type = api.OnDeleteStatefulSetStrategyType
	dsOnDelete := daemonSet(1, 1, api.DaemonSetStatus{})
	dsOnDelete.Spec.UpdateStrategy.Type = api.OnDeleteDaemonSetStrategyType
	for _, tc := range []struct {
		name string
		obj  api.Object
		msg  string
		done bool
		fail bool
	}{
		{"sts not observed", statefulSet(2, 1, 3, nil, api.StatefulSetStatus{}), "Waiting for statefulset spec update to be observed...", false, false},
		{"sts never observed", statefulSet(1, 0, 3, nil, api.StatefulSetStatus{}), "Waiting for statefulset spec update to be observed...", false, false},
		{"sts not ready", statefulSet(2, 2, 3, nil, api.StatefulSetStatus{ReadyReplicas: 1}), "Waiting for 2 pods to be ready...", false, false},
		{"sts updating", statefulSet(2, 2, 3, nil, api.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 1, CurrentRevision: "db-1", UpdateRevision: "db-2"}),
			"waiting for statefulset rolling update to complete 1 pods at revision db-2...", false, false},
		{"sts done", statefulSet(2, 2, 3, nil, api.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 3, CurrentReplicas: 3, CurrentRevision: "db-2", UpdateRevision: "db-2"}),
			"statefulset rolling update complete 3 pods at revision db-2...", true, false},
		{"sts partitioned", statefulSet(2, 2, 3, &one, api.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 1}),
			"Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...", false, false},
		{"sts partition done", statefulSet(2, 2, 3, &one, api.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 2}),
			"partitioned roll out complete: 2 new pods have been updated...", true, false},
		{"sts on delete", onDelete, "", false, true},
		{"ds not observed", daemonSet(2, 1, api.DaemonSetStatus{}), "Waiting for daemon set spec update to be observed...", false, false},
		{"ds updating", daemonSet(2, 2, api.DaemonSetStatus{DesiredNumberScheduled: 3, UpdatedNumberScheduled: 1}),
			`Waiting for daemon set "logs" rollout to finish: 1 out of 3 new pods have been updated...`, false, false},
		{"ds unavailable", daemonSet(2, 2, api.DaemonSetStatus{DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 2}),
			`Waiting for daemon set "logs" rollout to finish: 2 of 3 updated pods are available...`, false, false},
		{"ds done", daemonSet(2, 2, api.DaemonSetStatus{DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3}),
			`daemon set "logs" successfully rolled out`, true, false},
		{"ds no nodes", daemonSet(1, 1, api.DaemonSetStatus{}), `daemon set "logs" successfully rolled out`, true, false},
		{"ds on delete", dsOnDelete, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, done, err := rolloutStatus(tc.obj)
			if (err != nil) != tc.fail || (err != nil && !errors.Is(err, errRolloutFailed)) {
				t.Fatalf("err = %v, want failure %v", err, tc.fail)
			}
			if msg != tc.msg || done != tc.done {
				t.Errorf("got (%q, %v), want (%q, %v)", msg, done, tc.msg, tc.done)
			}
		})
	}
}

func revision(n int64, image string) rolloutRevision {
	r := rolloutRevision{number: n, template: &api.PodTemplateSpec{}}
	r.template.Labels = map[string]string{"app": "web"}
	r.template.Spec.Containers = []api.Container{{Name: "c", Image: image}}
	return r
}

func TestRollbackTarget(t *testing.T) {
	ref := rolloutRef{kind: api.KindOf(&api.StatefulSet{}), name: "db"}
	hist := []rolloutRevision{revision(3, "v3"), revision(2, "v2"), revision(1, "v1")}
	if r, err := rollbackTarget(ref, hist, 0); err != nil || r.number != 2 {
		t.Errorf("previous: %v %d", err, r.number)
	}
	if r, err := rollbackTarget(ref, hist, 1); err != nil || r.template.Spec.Containers[0].Image != "v1" {
		t.Errorf("to revision 1: %v %+v", err, r)
	}
	if _, err := rollbackTarget(ref, hist, 9); err == nil || err.Error() != "unable to find the specified revision 9 of statefulset.apps/db" {
		t.Errorf("unknown revision: %v", err)
	}
	if _, err := rollbackTarget(ref, hist[:1], 0); err == nil || !strings.Contains(err.Error(), "no rollout history") {
		t.Errorf("one revision: %v", err)
	}
}

// TestPrintRolloutHistory: kubectl's table, oldest first, and one
// revision's template.
func TestPrintRolloutHistory(t *testing.T) {
	ref := rolloutRef{kind: api.KindOf(&api.DaemonSet{}), name: "logs"}
	hist := []rolloutRevision{revision(3, "v3"), revision(1, "v1")}
	hist[0].annotations = map[string]string{annotationChangeCause: "set image v3"}
	var b strings.Builder
	if err := printRolloutHistory(&b, ref, hist, 0); err != nil {
		t.Fatal(err)
	}
	want := "daemonset.apps/logs\nREVISION  CHANGE-CAUSE\n1         <none>\n3         set image v3\n"
	if b.String() != want {
		t.Errorf("history:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := printRolloutHistory(&b, ref, hist, 3); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "daemonset.apps/logs with revision #3\nPod Template:\n") || !strings.Contains(b.String(), "v3") {
		t.Errorf("revision 3:\n%s", b.String())
	}
	if err := printRolloutHistory(&b, ref, hist, 2); err == nil {
		t.Error("revision 2 printed")
	}
}

// TestRollbackAnnotations: the Deployment keeps its own annotations and
// takes the others from the ReplicaSet it goes back to, as kubectl's undo.
func TestRollbackAnnotations(t *testing.T) {
	own := map[string]string{
		api.AnnotationDeploymentRevision: "3",
		api.AnnotationLastAppliedConfig:  "{}",
		api.AnnotationSource:             "api",
		annotationChangeCause:            "set image v3",
		"team":                           "web",
	}
	target := map[string]string{
		api.AnnotationDeploymentRevision: "1",
		annotationChangeCause:            "create v1",
		api.AnnotationDesiredReplicas:    "1",
	}
	got := rollbackAnnotations(own, target)
	want := map[string]string{
		api.AnnotationDeploymentRevision: "3",
		api.AnnotationLastAppliedConfig:  "{}",
		api.AnnotationSource:             "api",
		annotationChangeCause:            "create v1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("annotations %v, want %v", got, want)
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

// setManifest is a StatefulSet or DaemonSet of no pods (no node runs
// them here) whose template and change-cause carry value.
func setManifest(kind, value string) string {
	replicas := ""
	if kind == "StatefulSet" {
		replicas = "  replicas: 0\n  serviceName: db\n"
	}
	return `apiVersion: apps/v1
kind: ` + kind + `
metadata:
  name: db
  annotations: {kubernetes.io/change-cause: "version ` + value + `"}
spec:
` + replicas + `  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: db
        env:
        - {name: VERSION, value: "` + value + `"}
`
}

// TestRolloutOfSets: berth rollout status, history, restart and undo
// follow a StatefulSet's and a DaemonSet's ControllerRevisions.
func TestRolloutOfSets(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	kubeconfig := startSourcedControlPlane(t)
	dir := t.TempDir()
	berth := func(args ...string) result {
		t.Helper()
		return runBerth(t, "", append(args, "--kubeconfig", kubeconfig)...)
	}
	for _, tc := range []struct{ kind, ref, done string }{
		{"StatefulSet", "sts/db", "partitioned roll out complete: 0 new pods have been updated..."},
		{"DaemonSet", "ds/db", `daemon set "db" successfully rolled out`},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			template := func() api.PodTemplateSpec {
				r := berth("get", tc.ref, "-o", "json")
				var o struct {
					Spec struct{ Template api.PodTemplateSpec }
				}
				if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
					t.Fatalf("get %s: %v\n%s", tc.ref, err, r.stderr)
				}
				return o.Spec.Template
			}
			manifest := filepath.Join(dir, tc.kind+".yaml")
			for _, v := range []string{"1", "2"} {
				writeFile(t, manifest, setManifest(tc.kind, v))
				if r := berth("apply", "-f", manifest); r.code != exitOK {
					t.Fatalf("apply %s: %s", v, r.stderr)
				}
				if r := berth("rollout", "status", tc.ref, "--timeout", "30s"); r.code != exitOK || !strings.HasSuffix(r.stdout, tc.done+"\n") {
					t.Fatalf("status after %s: exit %d\n%s%s", v, r.code, r.stdout, r.stderr)
				}
			}
			history := func() string {
				t.Helper()
				var out string
				waitReady(t, func() bool {
					r := berth("rollout", "history", tc.ref)
					out = r.stdout
					return r.code == exitOK && strings.Contains(out, "version 2")
				})
				return out
			}
			// Each revision keeps the change-cause of its template.
			if h := history(); !strings.Contains(h, "REVISION  CHANGE-CAUSE\n1         version 1\n2         version 2\n") {
				t.Errorf("history:\n%s", h)
			}
			r := berth("rollout", "restart", tc.ref)
			if r.code != exitOK || !strings.HasSuffix(r.stdout, "/db restarted\n") {
				t.Fatalf("restart: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if template().Annotations[annotationRestartedAt] == "" {
				t.Errorf("restart set no %s", annotationRestartedAt)
			}
			berth("rollout", "status", tc.ref, "--timeout", "30s")
			waitReady(t, func() bool { return strings.Contains(berth("rollout", "history", tc.ref).stdout, "\n3 ") })
			if r := berth("rollout", "history", tc.ref, "--revision", "3"); r.code != exitOK || !strings.Contains(r.stdout, "with revision #3\nPod Template:\n") || !strings.Contains(r.stdout, annotationRestartedAt) {
				t.Errorf("history --revision 3: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}

			// Undo goes back to revision 2: the restart's annotation goes
			// with it, whole.
			if r := berth("rollout", "undo", tc.ref); r.code != exitOK || !strings.HasSuffix(r.stdout, "/db rolled back\n") {
				t.Fatalf("undo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if got := template(); got.Annotations[annotationRestartedAt] != "" || got.Spec.Containers[0].Env[0].Value != "2" {
				t.Errorf("template after undo: %+v", got)
			}
			if r := berth("rollout", "undo", tc.ref, "--to-revision", "1"); r.code != exitOK {
				t.Fatalf("undo to 1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if got := template(); got.Spec.Containers[0].Env[0].Value != "1" {
				t.Errorf("template after undo to 1: %+v", got)
			}
			// The revision gone back to is numbered anew.
			waitReady(t, func() bool {
				h := berth("rollout", "history", tc.ref).stdout
				return strings.HasSuffix(h, "\n4         version 2\n5         version 1\n")
			})
			if r := berth("rollout", "undo", tc.ref, "--to-revision", "5"); r.code != exitOK || !strings.Contains(r.stdout, "skipped rollback (current template already matches revision 5)") {
				t.Errorf("undo to the current revision: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if r := berth("rollout", "undo", tc.ref, "--to-revision", "99"); r.code != exitFailure || !strings.Contains(r.stderr, "revision 99") {
				t.Errorf("undo to a missing revision: exit %d\n%s", r.code, r.stderr)
			}
		})
	}
}
