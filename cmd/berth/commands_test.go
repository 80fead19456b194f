package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// The tests in this file drive get, describe, apply and delete against
// fakeAPI: they check argument handling, exit codes, what is asked of the
// server and what is printed. They stand in for end-to-end tests until
// the real client lands; the printers' own tests use no fake.

// useFakeAPI makes the commands talk to f and print ages against
// fixtureNow; it returns where the kubeconfig path each command used is
// written.
func useFakeAPI(t *testing.T, f *fakeAPI) *string {
	t.Helper()
	oldConnect, oldNow := connectAPI, timeNow
	var kubeconfig string
	connectAPI = func(g *globalOptions) (apiClient, error) {
		kubeconfig = g.kubeconfigFiles().String()
		return f, nil
	}
	timeNow = func() time.Time { return fixtureNow }
	t.Cleanup(func() { connectAPI, timeNow = oldConnect, oldNow })
	return &kubeconfig
}

// cluster is a fake control plane holding every fixture.
func cluster() *fakeAPI {
	kinds := fixtureKinds()
	resources := make([]string, 0, len(kinds))
	for r := range kinds {
		resources = append(resources, r)
	}
	sort.Strings(resources) // resourceVersions in a stable order
	var objs []api.Object
	for _, r := range resources {
		objs = append(objs, kinds[r]...)
	}
	return newFakeAPI(objs...)
}

// TestCommandsGolden records whole runs (stdout, stderr, exit code) of
// the user commands against the fake cluster.
func TestCommandsGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"get-pods", []string{"get", "pods"}, exitOK},
		{"get-po-shop", []string{"get", "po", "-n", "shop"}, exitOK},
		{"get-pods-A-wide", []string{"get", "pods", "-A", "-o", "wide"}, exitOK},
		{"get-pods-selector", []string{"get", "pods", "-l", "app=web", "--show-labels"}, exitOK},
		{"get-pods-field-selector", []string{"get", "pods", "-A", "--field-selector", "spec.nodeName=node-2"}, exitOK},
		{"get-named-some-missing", []string{"get", "pods", "web-7d4b9c-abcde", "nope", "cache-0"}, exitFailure},
		{"get-kind-slash-name", []string{"get", "deploy/web", "svc/web", "no/node-1"}, exitOK},
		{"get-comma-kinds", []string{"get", "deploy,svc", "-A"}, exitOK},
		{"get-cluster-scoped", []string{"get", "nodes"}, exitOK},
		{"get-sources", []string{"get", "src"}, exitOK},
		{"get-one-json", []string{"get", "sc", "fast", "-o", "json"}, exitOK},
		{"get-list-yaml", []string{"get", "ns", "-l", "team=shop", "-o", "yaml"}, exitOK},
		{"get-name", []string{"get", "deploy,pvc", "-A", "-o", "name"}, exitOK},
		{"get-empty", []string{"get", "pods", "-n", "nothing"}, exitOK},
		{"get-empty-all", []string{"get", "pods", "-A", "-l", "app=none"}, exitOK},
		{"get-unknown-kind", []string{"get", "widgets"}, exitUsage},
		{"get-bad-output", []string{"get", "pods", "-o", "table"}, exitUsage},
		{"get-bad-selector", []string{"get", "pods", "-l", "app in ("}, exitUsage},
		{"get-name-and-selector", []string{"get", "pods", "x", "-l", "app=web"}, exitUsage},
		{"get-mixed-forms", []string{"get", "pods", "svc/web"}, exitUsage},
		{"get-no-kind", []string{"get"}, exitUsage},
		{"get-label-columns", []string{"get", "pods", "-A", "-L", "app,app.kubernetes.io/name", "-L", "tier"}, exitOK},
		{"get-sort-by-creation", []string{"get", "pods", "-A", "--sort-by=.metadata.creationTimestamp"}, exitOK},
		{"get-sort-by-node", []string{"get", "pods", "-A", "--sort-by", "{.spec.nodeName}", "-o", "name"}, exitOK},
		{"get-sort-by-bad-path", []string{"get", "pods", "--sort-by", "{.metadata.name"}, exitUsage},
		{"get-sort-by-watch", []string{"get", "pods", "--sort-by", ".metadata.name", "-w"}, exitUsage},
		{"describe-pod", []string{"describe", "pod", "web-7d4b9c-fghij"}, exitOK},
		{"describe-prefix", []string{"describe", "svc", "pay"}, exitOK},
		{"describe-missing", []string{"describe", "deploy", "nope"}, exitFailure},
		{"describe-node-by-selector", []string{"describe", "nodes", "-l", "kubernetes.io/os=linux"}, exitOK},
		{"describe-two", []string{"describe", "sa"}, exitOK},
		{"delete-pod", []string{"delete", "pod", "web-7d4b9c-abcde"}, exitOK},
		{"delete-mixed", []string{"delete", "deploy/web", "sc/fast", "src/fleet", "pod/nope"}, exitFailure},
		{"delete-ignore-not-found", []string{"delete", "pods", "nope", "db-0", "-n", "shop", "--ignore-not-found"}, exitOK},
		{"delete-selector", []string{"delete", "pods", "-l", "app=web"}, exitOK},
		{"delete-no-name", []string{"delete", "pods"}, exitUsage},
		{"delete-bad-cascade", []string{"delete", "pod", "x", "--cascade=sideways"}, exitUsage},
		{"exec-no-dash", []string{"exec", "web-7d4b9c-abcde", "ls"}, exitUsage},
		{"exec-not-a-pod", []string{"exec", "svc/web", "--", "ls"}, exitUsage},
		{"exec-missing-pod", []string{"exec", "nope", "--", "ls"}, exitFailure},
		{"port-forward-bad-port", []string{"port-forward", "web-7d4b9c-abcde", "80:http"}, exitUsage},
		{"port-forward-missing-pod", []string{"port-forward", "nope", "8080"}, exitFailure},
		{"top-bad-kind", []string{"top", "deploy"}, exitUsage},
		{"top-name-and-selector", []string{"top", "pod", "web", "-l", "app=web"}, exitUsage},
		{"top-node-containers", []string{"top", "node", "--containers"}, exitUsage},
		{"reconcile-unknown", []string{"reconcile", "foo", "bar"}, exitUsage},
		{"rollout-unknown", []string{"rollout", "pause", "deploy/web"}, exitUsage},
		{"rollout-undo-missing", []string{"rollout", "undo", "deploy/nosuch"}, exitFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			useFakeAPI(t, cluster())
			r := runBerth(t, "", tt.args...)
			if r.code != tt.code {
				t.Errorf("exit code = %d, want %d\nstderr: %s", r.code, tt.code, r.stderr)
			}
			checkGolden(t, "cmd/"+tt.name, r.golden(tt.args))
		})
	}
}

// runBerthUntilCancelled runs a command whose fake API cancels it, as a
// user ends `get -w` with Ctrl-C.
func runBerthUntilCancelled(t *testing.T, f *fakeAPI, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.cancel = cancel
	var out, errOut bytes.Buffer
	code := run(ctx, args, strings.NewReader(""), &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func TestGetWatch(t *testing.T) {
	f := cluster()
	pods := fixturePods()
	changed := pods[0].DeepCopyObject().(*api.Pod)
	changed.Status.ContainerStatuses[0].Ready = false
	changed.ResourceVersion = "100"
	gone := pods[1].DeepCopyObject().(*api.Pod)
	gone.ResourceVersion = "101"
	f.watches = [][]watchEvent{
		{{Type: watchBookmark, Object: &api.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "99"}}}, {Type: watchModified, Object: changed}},
		{{Type: watchDeleted, Object: gone}},
	}
	useFakeAPI(t, f)
	args := []string{"get", "pods", "-l", "pod-template-hash=7d4b9c", "-w"}
	r := runBerthUntilCancelled(t, f, args...)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	checkGolden(t, "cmd/get-watch", r.golden(args))
	var watches []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, "watch ") {
			watches = append(watches, c)
		}
	}
	// The first watch starts at the list's revision, the second where
	// the first was closed.
	listRV := strconv.Itoa(f.rv)
	want := []string{"watch pods default  from " + listRV, "watch pods default  from 100"}
	if strings.Join(watches, "|") != strings.Join(want, "|") {
		t.Errorf("watches = %q, want %q", watches, want)
	}

	// A watch of one named object narrows by metadata.name.
	f = cluster()
	useFakeAPI(t, f)
	if r := runBerthUntilCancelled(t, f, "get", "node", "node-1", "-w", "-o", "name"); r.code != exitOK || r.stdout != "node/node-1\n" {
		t.Errorf("watch by name: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !containsCall(f.calls, "watch nodes  metadata.name=node-1 from ") {
		t.Errorf("calls = %q", f.calls)
	}
	if r := runBerth(t, "", "get", "pods,svc", "-w"); r.code != exitUsage {
		t.Errorf("watch of two kinds: exit %d, want %d", r.code, exitUsage)
	}

	// A watch the server refuses ends the command with its error.
	f = cluster()
	f.fail["watch pods default  from "+strconv.Itoa(f.rv)] = apierrors.NewForbidden(api.KindOf(&api.Pod{}).GroupResource(), "", errors.New("not allowed"))
	useFakeAPI(t, f)
	r = runBerthUntilCancelled(t, f, "get", "pods", "-w")
	if r.code != exitFailure || !strings.Contains(r.stderr, "Error from server (Forbidden)") {
		t.Errorf("refused watch: exit %d, stderr %q", r.code, r.stderr)
	}
}

func containsCall(calls []string, prefix string) bool {
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

func TestApply(t *testing.T) {
	f := newFakeAPI()
	useFakeAPI(t, f)

	r := runBerth(t, "", "apply", "-f", "testdata/apply/app.yaml")
	if r.code != exitOK {
		t.Fatalf("first apply: exit %d: %s", r.code, r.stderr)
	}
	want := "namespace/shop created\nconfigmap/settings created\nservice/web created\ndeployment.apps/web created\n"
	if r.stdout != want {
		t.Errorf("first apply printed\n%s\nwant\n%s", r.stdout, want)
	}
	cm := f.objects["configmaps/default/settings"]
	if cm == nil {
		t.Fatalf("settings not created in -n's namespace; objects: %v", f.objects)
	}
	if got := cm.GetAnnotations()[api.AnnotationSource]; got != "api" {
		t.Errorf("berth.dev/source = %q, want api", got)
	}
	if cm.GetAnnotations()[api.AnnotationLastAppliedConfig] == "" {
		t.Errorf("no last-applied annotation")
	}
	// What apply creates is defaulted as a source would.
	if d := f.objects["deployments/shop/web"].(*api.Deployment); d.Spec.Template.Spec.RestartPolicy != api.RestartPolicyAlways {
		t.Errorf("deployment not defaulted: restartPolicy %q", d.Spec.Template.Spec.RestartPolicy)
	}

	// A controller writes status and an annotation; the agent... nothing
	// of that makes the next apply report a change.
	d := f.objects["deployments/shop/web"].(*api.Deployment)
	d.Status.Replicas, d.Status.ReadyReplicas = 2, 2
	d.Annotations["deployment.kubernetes.io/revision"] = "1"
	f.put(d)
	f.calls = nil
	r = runBerth(t, "", "apply", "-f", "testdata/apply/app.yaml")
	want = "namespace/shop unchanged\nconfigmap/settings unchanged\nservice/web unchanged\ndeployment.apps/web unchanged\n"
	if r.code != exitOK || r.stdout != want {
		t.Errorf("second apply: exit %d\n%s\nwant\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("unchanged objects were written: %v", w)
	}

	r = runBerth(t, "", "apply", "-f", "testdata/apply/app-v2.yaml")
	want = "namespace/shop unchanged\nconfigmap/settings unchanged\nservice/web unchanged\ndeployment.apps/web configured\n"
	if r.code != exitOK || r.stdout != want {
		t.Errorf("third apply: exit %d\n%s\nwant\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	d = f.objects["deployments/shop/web"].(*api.Deployment)
	if *d.Spec.Replicas != 3 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" {
		t.Errorf("deployment not updated: replicas %d image %s", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
	}
	if _, ok := d.Labels["tier"]; ok {
		t.Errorf("label removed from the manifest is still there: %v", d.Labels)
	}
	if d.Annotations["deployment.kubernetes.io/revision"] != "1" || d.Status.ReadyReplicas != 2 {
		t.Errorf("apply dropped what it did not manage: annotations %v status %+v", d.Annotations, d.Status)
	}
}

func TestApplyRefusals(t *testing.T) {
	t.Run("invalid manifests write nothing", func(t *testing.T) {
		f := newFakeAPI()
		useFakeAPI(t, f)
		args := []string{"apply", "-f", "testdata/apply/app.yaml", "-f", "testdata/apply/bad.yaml"}
		r := runBerth(t, "", args...)
		if r.code != exitUsage {
			t.Errorf("exit %d, want %d", r.code, exitUsage)
		}
		if len(f.calls) != 0 {
			t.Errorf("the server was called: %v", f.calls)
		}
		checkGolden(t, "cmd/apply-invalid", r.golden(args))
	})
	t.Run("explicit namespace that differs", func(t *testing.T) {
		f := newFakeAPI()
		useFakeAPI(t, f)
		r := runBerth(t, "", "apply", "-n", "other", "-f", "testdata/apply/app.yaml")
		if r.code != exitUsage || len(f.calls) != 0 {
			t.Errorf("exit %d, calls %v", r.code, f.calls)
		}
		if !strings.Contains(r.stderr, `metadata.namespace: Invalid value: "shop": does not match the namespace "other"`) {
			t.Errorf("stderr: %s", r.stderr)
		}
	})
	t.Run("explicit namespace fills the others", func(t *testing.T) {
		f := newFakeAPI()
		useFakeAPI(t, f)
		manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
		r := runBerth(t, manifest, "apply", "-n", "team", "-f", "-")
		if r.code != exitOK || f.objects["configmaps/team/a"] == nil {
			t.Errorf("exit %d, stderr %s, objects %v", r.code, r.stderr, f.objects)
		}
	})
	t.Run("owned by another source", func(t *testing.T) {
		owned := fixtureDeployments()[0] // annotated berth.dev/source: fleet
		owned.SetNamespace("shop")
		f := newFakeAPI(owned, &api.Source{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}})
		useFakeAPI(t, f)
		args := []string{"apply", "-f", "testdata/apply/app.yaml"}
		r := runBerth(t, "", args...)
		if r.code != exitFailure {
			t.Errorf("exit %d, want %d", r.code, exitFailure)
		}
		checkGolden(t, "cmd/apply-owned", r.golden(args))
	})
	t.Run("server refusal", func(t *testing.T) {
		f := newFakeAPI()
		f.fail["create services shop/web"] = apierrors.NewInvalid(api.KindOf(&api.Service{}).GVK.GroupKind(), "web", nil)
		f.fail["get configmaps default/settings"] = errors.New("connection refused")
		useFakeAPI(t, f)
		args := []string{"apply", "-f", "testdata/apply/app.yaml"}
		r := runBerth(t, "", args...)
		if r.code != exitFailure {
			t.Errorf("exit %d, want %d", r.code, exitFailure)
		}
		checkGolden(t, "cmd/apply-server-refusal", r.golden(args))
	})
	t.Run("conflict", func(t *testing.T) {
		f := newFakeAPI()
		useFakeAPI(t, f)
		if r := runBerth(t, "", "apply", "-f", "testdata/apply/app.yaml"); r.code != exitOK {
			t.Fatal(r.stderr)
		}
		f.fail["update deployments shop/web"] = apierrors.NewConflict(api.KindOf(&api.Deployment{}).GroupResource(), "web", errors.New("the object has been modified; please apply your changes to the latest version and try again"))
		r := runBerth(t, "", "apply", "-f", "testdata/apply/app-v2.yaml")
		want := `Error from server (Conflict): error when updating "testdata/apply/app-v2.yaml": Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your changes to the latest version and try again`
		if r.code != exitFailure || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr %s", r.code, r.stderr)
		}
	})
}

func TestDelete(t *testing.T) {
	t.Run("cascade and grace period", func(t *testing.T) {
		f := cluster()
		useFakeAPI(t, f)
		r := runBerth(t, "", "delete", "deploy", "web", "--cascade=orphan", "--grace-period=0")
		if r.code != exitOK || r.stdout != "deployment.apps \"web\" deleted\n" {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if got := f.deletes[0]; got.PropagationPolicy != "Orphan" || got.GracePeriodSeconds == nil || *got.GracePeriodSeconds != 0 {
			t.Errorf("delete options = %+v", got)
		}
		r = runBerth(t, "", "delete", "pod", "cache-0", "--now")
		if got := f.deletes[1]; r.code != exitOK || got.PropagationPolicy != "Background" || *got.GracePeriodSeconds != 1 {
			t.Errorf("exit %d, delete options = %+v", r.code, got)
		}
		r = runBerth(t, "", "delete", "pod", "migrate-x7k2p", "--cascade=foreground")
		if got := f.deletes[2]; r.code != exitOK || got.PropagationPolicy != "Foreground" || got.GracePeriodSeconds != nil {
			t.Errorf("exit %d, delete options = %+v", r.code, got)
		}
	})
	t.Run("from manifests", func(t *testing.T) {
		f := newFakeAPI()
		useFakeAPI(t, f)
		if r := runBerth(t, "", "apply", "-f", "testdata/apply/app.yaml"); r.code != exitOK {
			t.Fatal(r.stderr)
		}
		args := []string{"delete", "-f", "testdata/apply/app.yaml"}
		r := runBerth(t, "", args...)
		want := "deployment.apps \"web\" deleted\nservice \"web\" deleted\nconfigmap \"settings\" deleted\nnamespace \"shop\" deleted\n"
		if r.code != exitOK || r.stdout != want {
			t.Errorf("exit %d\n%s\nwant\n%s\nstderr %s", r.code, r.stdout, want, r.stderr)
		}
		if len(f.objects) != 0 {
			t.Errorf("left: %v", f.objects)
		}
	})
	t.Run("-f with names is bad usage", func(t *testing.T) {
		useFakeAPI(t, cluster())
		if r := runBerth(t, "", "delete", "pod", "x", "-f", "testdata/apply/app.yaml"); r.code != exitUsage {
			t.Errorf("exit %d", r.code)
		}
	})
}

// TestKubeconfigResolution follows kubeconfigHelp: the flag, else
// $BERTH_KUBECONFIG, else $KUBECONFIG's list, else the server's
// admin.kubeconfig in the data dir when it exists, else ~/.kube/config.
func TestKubeconfigResolution(t *testing.T) {
	used := useFakeAPI(t, cluster())
	home, xdg := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", xdg)
	t.Setenv(envKubeconfig, "/env/config")
	t.Setenv(envKubectlConfig, "/kube/a:/kube/b")
	runBerth(t, "", "get", "ns", "--kubeconfig", "/flag/config")
	if *used != "/flag/config" {
		t.Errorf("with the flag: %q", *used)
	}
	runBerth(t, "", "get", "ns")
	if *used != "/env/config" {
		t.Errorf("with $BERTH_KUBECONFIG: %q", *used)
	}
	t.Setenv(envKubeconfig, "")
	runBerth(t, "", "get", "ns")
	if *used != "/kube/a:/kube/b" {
		t.Errorf("with $KUBECONFIG: %q", *used)
	}
	t.Setenv(envKubectlConfig, "")
	admin := "/var/lib/berth/admin.kubeconfig"
	if os.Geteuid() != 0 {
		admin = filepath.Join(xdg, "berth", "admin.kubeconfig")
	}
	// Neither the server's file nor ~/.kube/config: the server's is named.
	runBerth(t, "", "get", "ns")
	if *used != admin {
		t.Errorf("with no file: %q, want %q", *used, admin)
	}
	if os.Geteuid() == 0 {
		return // the data dir is the machine's own /var/lib/berth
	}
	homeConfig := filepath.Join(home, ".kube", "config")
	for _, f := range []string{homeConfig, admin} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, homeConfig, "")
	runBerth(t, "", "get", "ns")
	if *used != homeConfig {
		t.Errorf("with ~/.kube/config only: %q", *used)
	}
	writeFile(t, admin, "")
	runBerth(t, "", "get", "ns")
	if *used != admin {
		t.Errorf("with the server's file and ~/.kube/config: %q, want %q", *used, admin)
	}
}

// TestMissingKubeconfig: a kubeconfig that cannot be read is named, and
// the command exits 1.
func TestMissingKubeconfig(t *testing.T) {
	r := runBerth(t, "", "get", "pods", "--kubeconfig", "/nowhere")
	if r.code != exitFailure || !strings.Contains(r.stderr, "/nowhere") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}
