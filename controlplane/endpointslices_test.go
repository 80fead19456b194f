package controlplane_test

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/testtool"
)

// TestKubectlReadsEndpointSlices: kubectl 1.32 and later read a service's
// endpoints from its EndpointSlices, which the control plane keeps, so
// `kubectl describe service` lists them and `kubectl get endpointslices`
// prints them in kubectl's columns.
func TestKubectlReadsEndpointSlices(t *testing.T) {
	kubectl := testtool.Need(t, "kubectl")
	s := cptest.Start(t, controlplane.Config{})
	ctx := context.Background()
	st := s.Store()
	node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	svc := &api.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"},
		Spec: api.ServiceSpec{Selector: map[string]string{"app": "hello"},
			Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}
	pod := func(name, ip string, ready api.ConditionStatus) *api.Pod {
		return &api.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": "hello"}},
			Spec: api.PodSpec{NodeName: "node-1", Containers: []api.Container{{Name: "hello", Image: "hello",
				Ports: []api.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
			Status: api.PodStatus{Phase: api.PodRunning, PodIP: ip, PodIPs: []api.PodIP{{IP: ip}},
				Conditions: []api.PodCondition{{Type: api.PodReady, Status: ready}}},
		}
	}
	for _, o := range []api.Object{node, svc, pod("hello-a", "127.0.0.21", api.ConditionTrue), pod("hello-b", "127.0.0.22", api.ConditionFalse)} {
		api.Default(o)
		if _, err := st.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", s.Credentials().Paths.AdminKubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}

	// describe lists the ready endpoint of each service port.
	testtool.WaitFor(t, 20*time.Second, "kubectl describe to list the endpoint", func() error {
		out, err := run("describe", "service", "hello")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if !regexp.MustCompile(`(?m)^Endpoints:\s+127\.0\.0\.21:8080$`).MatchString(out) {
			return fmt.Errorf("describe:\n%s", out)
		}
		return nil
	})

	// get prints kubectl's columns: every endpoint, ready or not.
	out, err := run("get", "endpointslices", "-l", "kubernetes.io/service-name=hello")
	if err != nil {
		t.Fatalf("kubectl get endpointslices: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME ADDRESSTYPE PORTS ENDPOINTS AGE" ||
		!regexp.MustCompile(`^hello-[a-z0-9]{5}\s+IPv4\s+8080\s+127\.0\.0\.21,127\.0\.0\.22\s+\d+s$`).MatchString(lines[1]) {
		t.Errorf("kubectl get endpointslices:\n%s", out)
	}

	// Readers find the slices by kube's labels, and the schema explains
	// them.
	out, err = run("get", "endpointslices", "-l", "kubernetes.io/service-name=hello,endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io", "-o", "jsonpath={.items[*].endpoints[*].conditions.ready}")
	if err != nil || strings.TrimSpace(out) != "true false" {
		t.Errorf("kubectl get -l … -o jsonpath: %v %q", err, out)
	}
	out, err = run("describe", "endpointslices", "-l", "kubernetes.io/service-name=hello")
	if err != nil || !regexp.MustCompile(`AddressType:\s+IPv4`).MatchString(out) || !regexp.MustCompile(`(?s)127\.0\.0\.22\s+Conditions:\s+Ready:\s+false`).MatchString(out) {
		t.Errorf("kubectl describe endpointslices: %v\n%s", err, out)
	}
	out, err = run("explain", "endpointslice.endpoints.conditions")
	if err != nil || !strings.Contains(out, "terminating") {
		t.Errorf("kubectl explain: %v\n%s", err, out)
	}
}
