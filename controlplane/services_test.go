package controlplane_test

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/testtool"
)

// TestKubernetesService: the control plane makes the kubernetes Service
// at the service range's first address, with an EndpointSlice naming
// its own API port.
func TestKubernetesService(t *testing.T) {
	s := cptest.Start(t, controlplane.Config{ServiceCIDR: "198.19.0.0/16"})
	u, err := url.Parse(s.LocalURL())
	if err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 20*time.Second, "the kubernetes service and its slice", func() error {
		obj, err := s.Store().Get(api.MustLookupResource("services"), "default", "kubernetes")
		if err != nil {
			return err
		}
		svc := obj.(*api.Service)
		if svc.Spec.ClusterIP != "198.19.0.1" || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.String() != u.Port() {
			return fmt.Errorf("service: %s %+v", svc.Spec.ClusterIP, svc.Spec.Ports)
		}
		obj, err = s.Store().Get(api.MustLookupResource("endpointslices"), "default", "kubernetes")
		if err != nil {
			return err
		}
		es := obj.(*api.EndpointSlice)
		if es.Labels[api.LabelServiceName] != "kubernetes" || len(es.Endpoints) != 1 || fmt.Sprint(*es.Ports[0].Port) != u.Port() {
			return fmt.Errorf("slice: %+v", es)
		}
		return nil
	})
}

// TestKubectlServices: kubectl makes NodePort and LoadBalancer Services
// and exposes a Deployment, each given a virtual IP, and is refused a
// taken address with Kubernetes' message.
func TestKubectlServices(t *testing.T) {
	kubectl := testtool.Need(t, "kubectl")
	s := cptest.Start(t, controlplane.Config{ServiceCIDR: "198.19.0.0/16", ServiceNodePortRange: "30000-30100"})
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", s.Credentials().Paths.AdminKubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{
		{"create", "service", "nodeport", "web", "--tcp=80:8080", "--node-port=30080"},
		{"create", "service", "loadbalancer", "lb", "--tcp=443:8443"},
		{"create", "service", "clusterip", "fixed", "--tcp=80", "--clusterip=198.19.0.10"},
		{"create", "deployment", "hello", "--image=hello", "--port=8080"},
		{"expose", "deployment", "hello", "--port=80", "--target-port=8080"},
	} {
		if out, err := run(args...); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, err := run("get", "svc", "web", "lb", "fixed", "hello", "-o", `jsonpath={range .items[*]}{.metadata.name} {.spec.type} {.spec.clusterIP} {.spec.ports[0].nodePort}{"\n"}{end}`)
	if err != nil {
		t.Fatalf("kubectl get svc: %v\n%s", err, out)
	}
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		got[f[0]] = f[1:]
	}
	if w := got["web"]; len(w) != 3 || w[0] != "NodePort" || !strings.HasPrefix(w[1], "198.19.") || w[2] != "30080" {
		t.Errorf("web: %v", w)
	}
	if w := got["lb"]; len(w) != 3 || w[0] != "LoadBalancer" || w[2] < "30000" || w[2] > "30100" {
		t.Errorf("lb: %v", w)
	}
	if w := got["fixed"]; len(w) != 2 || w[1] != "198.19.0.10" {
		t.Errorf("fixed: %v", w)
	}
	if w := got["hello"]; len(w) != 2 || w[0] != "ClusterIP" || !strings.HasPrefix(w[1], "198.19.") {
		t.Errorf("hello: %v", w)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"create", "service", "clusterip", "again", "--tcp=80", "--clusterip=198.19.0.10"}, "failed to allocate IP 198.19.0.10: provided IP is already allocated"},
		{[]string{"create", "service", "clusterip", "outside", "--tcp=80", "--clusterip=10.0.0.1"}, "the provided IP (10.0.0.1) is not in the valid range. The range of valid IPs is 198.19.0.0/16"},
		{[]string{"create", "service", "nodeport", "taken", "--tcp=80", "--node-port=30080"}, "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"},
	} {
		out, err := run(tc.args...)
		if err == nil || !strings.Contains(out, tc.msg) {
			t.Errorf("kubectl %s: %v\n%s\nwant %q", strings.Join(tc.args, " "), err, out, tc.msg)
		}
	}
}
