package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// TestReadinessGates: a pod with a readiness gate runs, its containers
// ready, but is not Ready until another party (here kubectl, as a load
// balancer controller would) sets the gate's condition True on its
// status; the agent then reports it Ready and keeps that condition in
// every status it writes.
func TestReadinessGates(t *testing.T) {
	testtool.Need(t, "kubectl")
	t.Parallel()
	const ip, gate = "127.0.0.24", "example.com/lb-registered"
	s := startServer(t)
	startAgent(t, s, "gated-node", ip)
	port := freePort(t, ip)
	s.applyText(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: gated, namespace: default}
spec:
  nodeName: gated-node
  terminationGracePeriodSeconds: 1
  readinessGates:
  - conditionType: %[4]s
  containers:
  - name: echo
    image: berth
    command: [%[1]q, toolbox, http-echo, --listen, "%[2]s:%[3]d", --text, gated]
`, bin, ip, port, gate))

	conditions := func() (map[api.PodConditionType]api.PodCondition, error) {
		out, stderr, code := s.berth(t, "get", "pod", "gated", "-o", "json")
		if code != 0 {
			return nil, fmt.Errorf("berth get pod gated: %s", stderr)
		}
		var p api.Pod
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			return nil, err
		}
		m := map[api.PodConditionType]api.PodCondition{}
		for _, c := range p.Status.Conditions {
			m[c.Type] = c
		}
		return m, nil
	}
	waitFor(t, 60*time.Second, "the containers ready, the pod held by its gate", func() error {
		c, err := conditions()
		if err != nil {
			return err
		}
		if r := c[api.PodReady]; c[api.ContainersReady].Status != api.ConditionTrue || r.Status != api.ConditionFalse || r.Reason != "ReadinessGatesNotReady" ||
			r.Message != `corresponding condition of pod readiness gate "`+gate+`" does not exist.` {
			return fmt.Errorf("conditions %+v", c)
		}
		return nil
	})

	s.kubectl(t, "patch", "pod", "gated", "--subresource=status", "--type=strategic",
		"-p", `{"status":{"conditions":[{"type":"`+gate+`","status":"True","reason":"Registered"}]}}`)
	waitFor(t, 30*time.Second, "the pod Ready, the gate's condition kept", func() error {
		c, err := conditions()
		if err != nil {
			return err
		}
		if c[api.PodReady].Status != api.ConditionTrue || c[gate].Status != api.ConditionTrue || c[gate].Reason != "Registered" {
			return fmt.Errorf("conditions %+v", c)
		}
		return nil
	})
	// The gate goes False again: the pod is no longer Ready.
	s.kubectl(t, "patch", "pod", "gated", "--subresource=status", "--type=strategic",
		"-p", `{"status":{"conditions":[{"type":"`+gate+`","status":"False","reason":"Deregistered"}]}}`)
	waitFor(t, 30*time.Second, "the pod unready once its gate is False", func() error {
		c, err := conditions()
		if err != nil {
			return err
		}
		if r := c[api.PodReady]; r.Status != api.ConditionFalse || r.Reason != "ReadinessGatesNotReady" || c[gate].Reason != "Deregistered" {
			return fmt.Errorf("conditions %+v", c)
		}
		return nil
	})
}

// TestActiveDeadlineSeconds: a pod still running at its
// activeDeadlineSeconds is stopped and Failed with reason
// DeadlineExceeded, as the kubelet ends it.
func TestActiveDeadlineSeconds(t *testing.T) {
	t.Parallel()
	const ip = "127.0.0.25"
	s := startServer(t)
	startAgent(t, s, "deadline-node", ip)
	port := freePort(t, ip)
	s.applyText(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: bounded, namespace: default}
spec:
  nodeName: deadline-node
  activeDeadlineSeconds: 2
  terminationGracePeriodSeconds: 1
  containers:
  - name: echo
    image: berth
    command: [%[1]q, toolbox, http-echo, --listen, "%[2]s:%[3]d", --text, bounded]
`, bin, ip, port))
	waitFor(t, 60*time.Second, "the pod Failed past its deadline", func() error {
		out, stderr, code := s.berth(t, "get", "pod", "bounded", "-o", "jsonpath={.status.phase} {.status.reason} {.status.containerStatuses[0].state.terminated.reason}")
		if code != 0 {
			return fmt.Errorf("berth get pod bounded: %s", stderr)
		}
		if out != "Failed DeadlineExceeded Error" && out != "Failed DeadlineExceeded Completed" {
			return fmt.Errorf("phase, reason, container's end: %q", out)
		}
		return nil
	})
	if _, err := httpGet(fmt.Sprintf("http://%s:%d/", ip, port)); err == nil {
		t.Error("the pod past its deadline still answers")
	}
}
