package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

func TestServerFirstStartAndRestart(t *testing.T) {
	s := startServer(t)

	// Secrets are private (SPEC §2, issue: files holding secrets are 0600).
	for _, f := range []string{"admin-token", "node-token", "sa.key", "admin.kubeconfig", "tls/ca.key", "tls/server.key"} {
		st, err := os.Stat(s.dataDir + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	kubeconfig, _ := os.ReadFile(s.kubeconfig)

	if out := s.mustBerth(t, "get", "namespaces", "-o", "name"); strings.TrimSpace(out) != "namespace/default\nnamespace/kube-node-lease\nnamespace/kube-public\nnamespace/kube-system" {
		t.Fatalf("namespaces: %q", out)
	}
	out := s.mustBerth(t, "apply", "-f", "testdata/hello")
	if !strings.Contains(out, "deployment.apps/hello created") || !strings.Contains(out, "service/hello created") {
		t.Fatalf("apply: %s", out)
	}
	if out := s.mustBerth(t, "apply", "-f", "testdata/hello"); !strings.Contains(out, "deployment.apps/hello unchanged") {
		t.Fatalf("second apply: %s", out)
	}
	deploy, err := s.getJSON(t, "deployment", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if got := field(deploy, "spec.replicas"); got != float64(2) {
		t.Fatalf("replicas %v", got)
	}
	uid := field(deploy, "metadata.uid")

	// A restart reuses the credentials and keeps the objects.
	s.stop(syscall.SIGTERM, 10*time.Second)
	s = startServerIn(t, s.dataDir, "--listen", strings.TrimPrefix(s.url, "https://"))
	again, _ := os.ReadFile(s.kubeconfig)
	if !bytes.Equal(kubeconfig, again) {
		t.Fatal("admin.kubeconfig changed across a restart")
	}
	deploy, err = s.getJSON(t, "deployment", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if field(deploy, "metadata.uid") != uid {
		t.Fatal("the deployment did not survive the restart")
	}

	if out := s.mustBerth(t, "delete", "deployment", "hello"); !strings.Contains(out, `deployment.apps "hello" deleted`) {
		t.Fatalf("delete: %s", out)
	}
	if _, stderr, code := s.berth(t, "get", "deployment", "hello"); code != 1 || !strings.Contains(stderr, "NotFound") {
		t.Fatalf("get after delete: exit %d, %s", code, stderr)
	}
}

func TestKubectlWorksAgainstServer(t *testing.T) {
	testtool.Need(t, "kubectl") // skipped, not failed, without it
	s := startServer(t)
	s.mustBerth(t, "apply", "-f", "testdata/hello")
	kc := func(args ...string) string {
		t.Helper()
		return s.kubectl(t, args...)
	}
	// The server reports the Kubernetes version it serves, berth's own as
	// build metadata, as k3s does: what kubectl and Helm compare against.
	var versions struct {
		ServerVersion struct{ Major, Minor, GitVersion string }
	}
	// (stdout alone: kubectl warns on stderr of a skew beyond one minor)
	vout, err := s.command(t, "kubectl", "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("kubectl version: %v", err)
	}
	if err := json.Unmarshal(vout, &versions); err != nil {
		t.Fatal(err)
	}
	if sv := versions.ServerVersion; sv.Major != "1" || !strings.HasPrefix(sv.GitVersion, "v1."+sv.Minor+".") || !strings.Contains(sv.GitVersion, "+berth.") {
		t.Errorf("kubectl version: server %+v", sv)
	}
	out := kc("get", "pods,nodes,services,deployments", "-A")
	if !strings.Contains(out, "deployment.apps/hello") || !strings.Contains(out, "service/hello") {
		t.Fatalf("kubectl get: %s", out)
	}
	if out := kc("get", "deployment", "hello", "-o", "yaml"); !strings.Contains(out, "name: hello") {
		t.Fatalf("kubectl get -o yaml: %s", out)
	}
	if out := kc("describe", "service", "hello"); !strings.Contains(out, "Selector:") {
		t.Fatalf("kubectl describe: %s", out)
	}
	if out := kc("delete", "service", "hello"); !strings.Contains(out, `service "hello" deleted`) {
		t.Fatalf("kubectl delete: %s", out)
	}

	// kubectl rollout undo to a revision patches the template and the
	// Deployment's revision annotation back, so the Deployment carries one.
	kc("create", "deployment", "undo", "--image=busybox", "--", "sleep", "3600")
	waitFor(t, 10*time.Second, "the first revision", func() error {
		d, err := s.getJSON(t, "deployment", "undo")
		if err != nil {
			return err
		}
		if ann, _ := field(d, "metadata.annotations").(map[string]any); ann["deployment.kubernetes.io/revision"] != "1" {
			return fmt.Errorf("annotations %v", ann)
		}
		return nil
	})
	kc("set", "env", "deployment/undo", "A=1")
	waitFor(t, 10*time.Second, "the second revision", func() error {
		out := kc("rollout", "history", "deployment/undo")
		if !strings.Contains(out, "\n2 ") {
			return fmt.Errorf("history %q", out)
		}
		return nil
	})
	if out := kc("rollout", "undo", "deployment/undo", "--to-revision=1"); !strings.Contains(out, "rolled back") {
		t.Fatalf("kubectl rollout undo: %s", out)
	}

	// kubectl create token asks for a service account's token in protobuf;
	// kubectl auth says who a token is and what it may do.
	kc("create", "serviceaccount", "robot")
	// A service account reads nothing until a binding lets it, as in
	// Kubernetes.
	if out, err := s.kubectlErr(t, "--as", "system:serviceaccount:default:robot", "get", "pods"); err == nil ||
		!strings.Contains(out, `User "system:serviceaccount:default:robot" cannot list resource "pods" in API group "" in the namespace "default"`) {
		t.Fatalf("the robot without a binding: %v, %s", err, out)
	}
	s.grantView(t, "default", "robot")
	tok := strings.TrimSpace(kc("create", "token", "robot", "--duration=10m"))
	if strings.Count(tok, ".") != 2 {
		t.Fatalf("kubectl create token: %q", tok)
	}
	if out := kc("--token", tok, "auth", "whoami"); !strings.Contains(out, "system:serviceaccount:default:robot") {
		t.Fatalf("kubectl auth whoami: %s", out)
	}
	if out := strings.TrimSpace(kc("--token", tok, "auth", "can-i", "list", "pods")); out != "yes" {
		t.Fatalf("kubectl auth can-i list pods: %q", out)
	}
	if out, err := s.kubectlErr(t, "--token", tok, "auth", "can-i", "delete", "deployments"); exitCode(err) != 1 || !strings.HasPrefix(out, "no") {
		t.Fatalf("kubectl auth can-i delete deployments: %v, %s", err, out)
	}
	// The admin acting as the service account (--as) gets its answers,
	// and as a user berth does not know, none.
	if out := strings.TrimSpace(kc("--as", "system:serviceaccount:default:robot", "auth", "can-i", "list", "pods")); out != "yes" {
		t.Fatalf("kubectl --as the robot auth can-i list pods: %q", out)
	}
	if out, err := s.kubectlErr(t, "--as", "bob", "get", "pods"); exitCode(err) != 1 || !strings.Contains(out, `User "bob" cannot list resource "pods"`) {
		t.Fatalf("kubectl --as bob get pods: %v, %s", err, out)
	}
	// The resource metrics are read as the objects they are about: the
	// service account may read its namespace's pods', not the nodes'.
	if out := kc("--token", tok, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods"); !strings.Contains(out, `"kind":"PodMetricsList"`) {
		t.Fatalf("pod metrics as the robot: %s", out)
	}
	if out, err := s.kubectlErr(t, "--token", tok, "top", "node"); err == nil || !strings.Contains(out, "forbidden") {
		t.Fatalf("kubectl top node as the robot: %v: %s", err, out)
	}
	if out := kc("--token", tok, "auth", "can-i", "--list"); !regexp.MustCompile(`(?m)^pods\s+\[\]\s+\[\]\s+\[get list watch\]$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^selfsubjectaccessreviews.authorization.k8s.io\s+\[\]\s+\[\]\s+\[create\]$`).MatchString(out) {
		t.Fatalf("kubectl auth can-i --list: %s", out)
	}

	// Server-side dry runs show and change nothing: --dry-run=server, and
	// kubectl diff, which exits 1 when the live object would change.
	if out := kc("create", "configmap", "dry", "--from-literal=a=b", "--dry-run=server", "-o", "name"); strings.TrimSpace(out) != "configmap/dry" {
		t.Fatalf("kubectl create --dry-run=server: %s", out)
	}
	if _, _, code := s.berth(t, "get", "configmap", "dry"); code != 1 {
		t.Fatalf("the dry-run configmap was created (get exit %d)", code)
	}
	manifest, err := os.ReadFile("testdata/hello/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(t.TempDir(), "hello.yaml")
	if err := os.WriteFile(changed, bytes.Replace(manifest, []byte("replicas: 2"), []byte("replicas: 5"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if diffOut, err := s.kubectlErr(t, "diff", "-f", changed); exitCode(err) != 1 || !strings.Contains(diffOut, "+  replicas: 5") {
		t.Fatalf("kubectl diff: %v\n%s", err, diffOut)
	}
	if d, err := s.getJSON(t, "deployment", "hello"); err != nil || field(d, "spec.replicas") != float64(2) {
		t.Fatalf("kubectl diff changed the deployment: %v %v", err, d)
	}

	// kubectl --validate is the fieldValidation of each write: strict by
	// default, the field named; warn, applied with a warning; false,
	// applied without a word.
	loose := filepath.Join(t.TempDir(), "loose.yaml")
	if err := os.WriteFile(loose, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loose\ndata:\n  a: b\ncolour: red\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := s.kubectlErr(t, "apply", "-f", loose); exitCode(err) != 1 || !strings.Contains(out, `colour: unknown field "colour"`) {
		t.Fatalf("kubectl apply of an unknown field: %v\n%s", err, out)
	}
	if out := kc("apply", "--validate=warn", "-f", loose); !strings.Contains(out, `Warning: unknown field "colour"`) || !strings.Contains(out, "configmap/loose created") {
		t.Fatalf("kubectl apply --validate=warn: %s", out)
	}
	kc("create", "namespace", "lenient")
	if out := kc("apply", "--validate=false", "-f", loose, "-n", "lenient"); strings.Contains(out, "Warning") || !strings.Contains(out, "configmap/loose created") {
		t.Fatalf("kubectl apply --validate=false: %s", out)
	}

	// kubectl explain reads the schemas, descriptions included.
	if out := kc("explain", "pods"); !strings.Contains(out, "KIND:       Pod") || !strings.Contains(out, "Pod is one or more containers") {
		t.Fatalf("kubectl explain pods: %s", out)
	}
	if out := kc("explain", "deployment.spec.template.spec.containers.resources"); !strings.Contains(out, "requests\t<map[string]Quantity>") {
		t.Fatalf("kubectl explain of a nested field: %s", out)
	}

	// Server-side apply: kubectl apply --server-side takes the fields it
	// sets; a kubectl scale then owns the replicas, so the next apply
	// conflicts, until it forces.
	if out := kc("apply", "--server-side", "-f", "testdata/hello/hello.yaml"); !strings.Contains(out, "deployment.apps/hello serverside-applied") {
		t.Fatalf("kubectl apply --server-side: %s", out)
	}
	kc("scale", "deployment", "hello", "--replicas=3")
	if out, err := s.kubectlErr(t, "apply", "--server-side", "-f", "testdata/hello/hello.yaml"); exitCode(err) != 1 || !strings.Contains(out, `conflict with "kubectl" with subresource "scale"`) || !strings.Contains(out, ".spec.replicas") {
		t.Fatalf("kubectl apply --server-side after a scale: %v\n%s", err, out)
	}
	kc("apply", "--server-side", "--force-conflicts", "-f", "testdata/hello/hello.yaml")
	if d, err := s.getJSON(t, "deployment", "hello"); err != nil || field(d, "spec.replicas") != float64(2) {
		t.Fatalf("after the forced apply: %v %v", err, field(d, "spec.replicas"))
	}

	// A watch sees a pod arrive and go; describe shows a node.
	watch := s.command(t, "kubectl", "get", "pods", "-w")
	var watched testtool.Buffer
	watch.Stdout, watch.Stderr = &watched, &watched
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer watch.Process.Kill()
	s.mustBerth(t, "apply", "-f", "testdata/node-and-pod.yaml")
	if out := kc("describe", "node", "worker-1"); !strings.Contains(out, "dedicated=batch:NoSchedule") {
		t.Fatalf("kubectl describe node: %s", out)
	}
	if out := kc("get", "pod", "sleeper", "-o", "yaml"); !strings.Contains(out, "restartPolicy: Always") {
		t.Fatalf("kubectl get pod -o yaml: %s", out)
	}
	if out := kc("delete", "pod", "sleeper"); !strings.Contains(out, `pod "sleeper" deleted`) {
		t.Fatalf("kubectl delete pod: %s", out)
	}
	waitFor(t, 10*time.Second, "kubectl get pods -w to show the pod", func() error {
		if !strings.Contains(watched.String(), "sleeper") {
			return fmt.Errorf("watch printed %q", watched.String())
		}
		return nil
	})
}

// TestKubectlAppliesLists has kubectl write a `kind: List`, whose items it
// validates itself against the server's OpenAPI v2 schemas (the v3
// documents, by which it leaves validation to the server, list no List):
// an item with an unknown field fails, named, and nothing is written; a
// good List is created, applied and applied server-side, as is the List
// kubectl get -o json prints.
func TestKubectlAppliesLists(t *testing.T) {
	testtool.Need(t, "kubectl")
	s := startServer(t)

	out, err := s.kubectlErr(t, "apply", "-f", "testdata/list-unknown-field.yaml")
	if exitCode(err) != 1 || !strings.Contains(out, `unknown field "colour" in com.github.berth-dev.berth.api.ConfigMap`) {
		t.Fatalf("kubectl apply of a List with an unknown field: %v\n%s", err, out)
	}
	if out, err := s.kubectlErr(t, "create", "-f", "testdata/list-unknown-field.yaml"); exitCode(err) != 1 || !strings.Contains(out, `unknown field "colour"`) {
		t.Fatalf("kubectl create of a List with an unknown field: %v\n%s", err, out)
	}
	if _, _, code := s.berth(t, "get", "configmap", "first"); code != 1 {
		t.Fatalf("the good item of the bad List was written (get exit %d)", code)
	}

	out = s.kubectl(t, "apply", "-f", "testdata/list.yaml")
	if !strings.Contains(out, "configmap/listed created") || !strings.Contains(out, "deployment.apps/listed created") {
		t.Fatalf("kubectl apply of a List: %s", out)
	}
	// A changed List is applied as patches kubectl computes from its own
	// types, as for a single object: the env var it no longer has goes.
	manifest, err := os.ReadFile("testdata/list.yaml")
	if err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(t.TempDir(), "list.yaml")
	without := strings.Replace(string(manifest), "                - name: B\n                  value: \"2\"\n", "", 1)
	if err := os.WriteFile(changed, []byte(without), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := s.kubectl(t, "apply", "-f", changed); !strings.Contains(out, "deployment.apps/listed configured") {
		t.Fatalf("kubectl apply of a changed List: %s", out)
	}
	if d, err := s.getJSON(t, "deployment", "listed"); err != nil || !strings.Contains(fmt.Sprint(field(d, "spec.template.spec.containers")), "env:[map[name:A value:1]]") {
		t.Fatalf("after the changed List: %v %v", err, field(d, "spec.template.spec.containers"))
	}

	// kubectl get -o json prints a List, which applies as it is.
	listed, err := s.command(t, "kubectl", "get", "configmaps", "-o", "json").Output()
	if err != nil {
		t.Fatalf("kubectl get configmaps -o json: %v", err)
	}
	apply := s.command(t, "kubectl", "apply", "-f", "-")
	apply.Stdin = bytes.NewReader(listed)
	if out, err := apply.CombinedOutput(); err != nil || !strings.Contains(string(out), "configmap/listed ") {
		t.Fatalf("kubectl get configmaps -o json | kubectl apply -f -: %v\n%s", err, out)
	}

	s.kubectl(t, "create", "namespace", "again")
	if out := s.kubectl(t, "create", "-n", "again", "-f", "testdata/list.yaml"); !strings.Contains(out, "configmap/listed created") || !strings.Contains(out, "deployment.apps/listed created") {
		t.Fatalf("kubectl create of a List: %s", out)
	}
	if out := s.kubectl(t, "apply", "--server-side", "-f", "testdata/list.yaml"); !strings.Contains(out, "configmap/listed serverside-applied") || !strings.Contains(out, "deployment.apps/listed serverside-applied") {
		t.Fatalf("kubectl apply --server-side of a List: %s", out)
	}
}
