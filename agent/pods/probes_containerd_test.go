package pods

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// TestContainerdGRPCProbes runs gRPC probes against a pod on a real
// containerd and its CNI network, as the kubelet does: a static Go server
// of the gRPC health protocol, built here, listens inside the pod's
// network namespace, where nothing of the node's does, so only a probe
// dialling the pod's own address reaches it. Its readiness probe (the
// empty service) makes the container ready, reads NOT_SERVING as not
// ready with the kubelet's kind of message, and ready again; once a
// startup probe passed, a liveness probe of a service that is
// NOT_SERVING restarts its container.
func TestContainerdGRPCProbes(t *testing.T) {
	ctx, env, ok := startContainerd(t)
	if !ok {
		return
	}
	image := env.Registry.Push(t, "grpchealth:1", critest.ProgramImage(t, ctx, "./testdata/grpchealth"))
	grpcProbe := func(port int32, service string, failures int32) *api.Probe {
		p := &api.Probe{ProbeHandler: api.ProbeHandler{GRPC: &corev1.GRPCAction{Port: port}}, PeriodSeconds: 1, FailureThreshold: failures}
		if service != "" {
			p.GRPC.Service = &service
		}
		return p
	}
	pod := criPod("grpc", api.PodSpec{
		Containers: []api.Container{
			{Name: "server", Image: image, Args: []string{"9090"}, ReadinessProbe: grpcProbe(9090, "", 1)},
			// Its startup probe holds the liveness probe back until the
			// server listens, so that the liveness probe's first failure
			// is the service's NOT_SERVING, not a refused connection.
			{Name: "sick", Image: image, Args: []string{"9091"}, StartupProbe: grpcProbe(9091, "", 60), LivenessProbe: grpcProbe(9091, "down", 1)},
		},
	})
	api.Default(pod)
	cm := startCRIManager(t, ctx, env, nil, nil, pod)

	// ready is the server's readiness and the pod's IP.
	ready := func() (bool, string) {
		st, _ := cm.rep.last(pod.UID)
		for _, cs := range st.ContainerStatuses {
			if cs.Name == "server" {
				return cs.Ready && cs.State.Running != nil, st.PodIP
			}
		}
		return false, st.PodIP
	}
	var ip string
	testtool.WaitFor(t, time.Minute, "the server ready by its gRPC probe", func() error {
		var ok bool
		if ok, ip = ready(); !ok || ip == "" || ip == "127.0.0.1" {
			return fmt.Errorf("ready %v, pod IP %q", ok, ip)
		}
		return nil
	})
	if !strings.HasPrefix(ip, "198.18.7.") {
		t.Errorf("pod IP %s, want one of the pods' network %s", ip, critest.PodCIDR)
	}
	// The node has no server of its own on the port: the probe that found
	// one went to the pod's address.
	if c, err := net.DialTimeout("tcp", "127.0.0.1:9090", time.Second); err == nil {
		c.Close()
		t.Fatal("something of the node's listens on 9090: the test proves nothing")
	}

	cm.exec(t, ctx, pod.UID, "server", "sh", "-c", ": > /tmp/not-serving")
	testtool.WaitFor(t, 30*time.Second, "the server not ready on NOT_SERVING", func() error {
		if ok, _ := ready(); ok {
			return fmt.Errorf("still ready")
		}
		return nil
	})
	cm.exec(t, ctx, pod.UID, "server", "busybox", "rm", "/tmp/not-serving")
	testtool.WaitFor(t, 30*time.Second, "the server ready again on SERVING", func() error {
		if ok, _ := ready(); !ok {
			return fmt.Errorf("not ready")
		}
		return nil
	})

	testtool.WaitFor(t, time.Minute, "the sick container restarted by its liveness probe", func() error {
		st, _ := cm.rep.last(pod.UID)
		for _, cs := range st.ContainerStatuses {
			if cs.Name == "sick" && cs.RestartCount >= 1 {
				return nil
			}
		}
		return fmt.Errorf("statuses %+v", st.ContainerStatuses)
	})
	evs := strings.Join(cm.ev.all(), "\n")
	for _, want := range []string{
		fmt.Sprintf(`Warning Unhealthy Readiness probe failed: grpc %s:9090: service "" unhealthy (responded with "NOT_SERVING")`, ip),
		fmt.Sprintf(`Warning Unhealthy Liveness probe failed: grpc %s:9091: service "down" unhealthy (responded with "NOT_SERVING")`, ip),
		"Normal Killing Container sick failed liveness probe, will be restarted",
	} {
		if !strings.Contains(evs, want) {
			t.Errorf("no event %q in:\n%s", want, evs)
		}
	}
	if strings.Contains(evs, "Container server failed") {
		t.Errorf("the server, which has no liveness probe, was killed:\n%s", evs)
	}
}
