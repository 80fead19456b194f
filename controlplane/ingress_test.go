package controlplane_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
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

// TestKubectlIngress: kubectl creates an Ingress, which gets the default
// class berth and the proxy's address, and `kubectl get ing` prints it;
// the proxy routes its host to a real backend behind a Service whose
// endpoints the controllers keep from its pod.
func TestKubectlIngress(t *testing.T) {
	kubectl := testtool.Need(t, "kubectl")
	s := cptest.Start(t, controlplane.Config{Ingress: &controlplane.IngressConfig{HTTPListen: "127.0.0.1:0", HTTPSListen: "127.0.0.1:0"}})
	ctx := context.Background()
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s%s", r.Host, r.URL.Path)
	}))
	defer back.Close()
	port := back.Listener.Addr().(*net.TCPAddr).Port
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-a", Labels: map[string]string{"app": "web"}},
		Spec: api.PodSpec{NodeName: "node-1", Containers: []api.Container{{Name: "web", Image: "web",
			Ports: []api.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}}},
		Status: api.PodStatus{Phase: api.PodRunning, PodIP: "127.0.0.1", PodIPs: []api.PodIP{{IP: "127.0.0.1"}},
			Conditions: []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue}}},
	}
	svc := &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: api.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
	for _, o := range []api.Object{&api.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, svc, pod} {
		api.Default(o)
		if _, err := s.Store().Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", s.Credentials().Paths.AdminKubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("create", "ingress", "shop", "--rule=shop.test/*=web:80"); err != nil {
		t.Fatalf("kubectl create ingress: %v\n%s", err, out)
	}
	testtool.WaitFor(t, 30*time.Second, "kubectl get ing to show the class and address", func() error {
		out, err := run("get", "ing")
		if err != nil || !strings.Contains(out, "shop   berth   shop.test   127.0.0.1   80") {
			return fmt.Errorf("%v\n%s", err, out)
		}
		return nil
	})
	if out, err := run("get", "ingressclass"); err != nil || !strings.Contains(out, "berth   berth.dev/ingress") {
		t.Fatalf("kubectl get ingressclass: %v\n%s", err, out)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	testtool.WaitFor(t, 30*time.Second, "the proxy to route shop.test", func() error {
		req, _ := http.NewRequest("GET", "http://"+s.Ingress().HTTPAddr().String()+"/cart", nil)
		req.Host = "shop.test"
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(b) != "hello from shop.test/cart" {
			return fmt.Errorf("%d %q", resp.StatusCode, b)
		}
		return nil
	})
}

// TestIngressOptional: a proxy left at the default addresses that cannot
// bind them is left off and the server runs; one asked for explicitly
// must bind.
func TestIngressOptional(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	s := cptest.Start(t, controlplane.Config{Ingress: &controlplane.IngressConfig{HTTPListen: taken.Addr().String(), Optional: true}})
	if s.Ingress() != nil {
		t.Error("a proxy that could not bind its address runs")
	}
	_, err = controlplane.New(context.Background(), controlplane.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Store: controlplane.StoreMemory,
		Ingress: &controlplane.IngressConfig{HTTPListen: taken.Addr().String()}})
	if err == nil || !strings.Contains(err.Error(), "ingress: listen") {
		t.Errorf("an explicit address in use: %v", err)
	}
}
