package controlplane_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// TestLimitRangeWithKubectl applies a LimitRange with kubectl and checks
// what Kubernetes' LimitRanger does: a Deployment's pods, written by the
// controllers, get the default requests and limits; a pod over a max is a
// 403 in Kubernetes' words; kubectl get and describe show the range.
func TestLimitRangeWithKubectl(t *testing.T) {
	s, run := startWithKubectl(t)
	manifest := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: LimitRange
metadata: {name: bounds}
spec:
  limits:
  - type: Container
    max: {cpu: "1"}
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 100m, memory: 64Mi}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run("apply", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	if out, err := run("get", "limits"); err != nil || !strings.Contains(out, "CREATED AT") || !strings.Contains(out, "bounds") {
		t.Errorf("kubectl get limits: %v\n%s", err, out)
	}
	out, err := run("describe", "limits", "bounds")
	// kubectl prints an item's resources in map order: each row alone.
	rows := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		rows[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, want := range []string{"Container cpu - 1 100m 500m -", "Container memory - - 64Mi 128Mi -"} {
		if err != nil || !rows[want] {
			t.Errorf("kubectl describe limits: no row %q: %v\n%s", want, err, out)
		}
	}

	if out, err := run("create", "deployment", "web", "--image=busybox", "--replicas=1", "--", "sleep", "1000"); err != nil {
		t.Fatalf("kubectl create deployment: %v\n%s", err, out)
	}
	podKind := api.MustLookupResource("pods")
	var pod *api.Pod
	testtool.WaitFor(t, time.Minute, "the deployment's pod", func() error {
		pods, _, err := s.Store().List(podKind, store.Filter{Namespace: "default"})
		if err != nil || len(pods) == 0 {
			return fmt.Errorf("%d pods: %v", len(pods), err)
		}
		pod = pods[0].(*api.Pod)
		return nil
	})
	res := pod.Spec.Containers[0].Resources
	if cpu, mem := res.Requests[api.ResourceCPU], res.Limits[api.ResourceMemory]; cpu.String() != "100m" || mem.String() != "128Mi" {
		t.Errorf("the deployment's pod has resources %+v", res)
	}
	if a := pod.Annotations["kubernetes.io/limit-ranger"]; a != "LimitRanger plugin set: cpu, memory request for container busybox; cpu, memory limit for container busybox" {
		t.Errorf("annotation %q", a)
	}

	out, err = run("run", "big", "--image=busybox", "--overrides", `{"spec":{"containers":[{"name":"big","image":"busybox","resources":{"limits":{"cpu":"2"}}}]}}`)
	want := `pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2`
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("kubectl run over the max: %v\n%s\nwant %s", err, out, want)
	}
}

// startWithKubectl starts a control plane and returns it with a runner
// of kubectl against it as the admin.
func startWithKubectl(t *testing.T) (*controlplane.Server, func(args ...string) (string, error)) {
	kubectl := testtool.Need(t, "kubectl")
	s := cptest.Start(t, controlplane.Config{})
	return s, func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", s.Credentials().Paths.AdminKubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
}
