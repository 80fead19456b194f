package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// TestHPAScalesABurningDeployment runs a Deployment whose pods burn CPU
// for half a minute and then idle, on an agent with the exec runtime,
// under an autoscaler made by kubectl autoscale and given a behaviour
// without a scale-down window: it scales up while the pods burn (kubectl
// top shows the same usage it reads) and back down to its minimum once
// they idle.
func TestHPAScalesABurningDeployment(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "kubectl")
	s := startServer(t)
	startAgent(t, s, "hpa", "127.0.0.91")
	s.applyText(t, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: burn
spec:
  replicas: 1
  selector:
    matchLabels: {app: burn}
  template:
    metadata:
      labels: {app: burn}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: berth
        command: [/bin/sh, -c, "end=$(( $(date +%s) + 30 )); while [ $(date +%s) -lt $end ]; do :; done; exec sleep 3600"]
        resources:
          requests: {cpu: 20m}
`)
	out := s.kubectl(t, "autoscale", "deployment", "burn", "--cpu-percent=50", "--min=1", "--max=3")
	if !strings.Contains(out, "autoscaled") {
		t.Fatalf("kubectl autoscale: %s", out)
	}
	s.kubectl(t, "patch", "hpa", "burn", "--type=merge", "-p", `{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":0}}}}`)

	waitFor(t, 3*time.Minute, "kubectl top to show the burning pod", func() error {
		out, err := s.kubectlErr(t, "top", "pod", "-l", "app=burn")
		if err != nil || !strings.Contains(out, "burn-") {
			return fmt.Errorf("kubectl top pod: %v: %s", err, out)
		}
		return nil
	})
	waitFor(t, 3*time.Minute, "the autoscaler to scale up", func() error {
		h, err := s.getJSON(t, "hpa", "burn")
		if err != nil {
			return err
		}
		if n, _ := field(h, "status.desiredReplicas").(float64); n < 2 {
			return fmt.Errorf("status %v", field(h, "status"))
		}
		return nil
	})
	if out := s.kubectl(t, "get", "hpa", "burn"); !strings.Contains(out, "Deployment/burn") || !strings.Contains(out, "/50%") {
		t.Errorf("kubectl get hpa: %s", out)
	}
	events := s.kubectl(t, "get", "events", "--field-selector", "involvedObject.kind=HorizontalPodAutoscaler")
	if !strings.Contains(events, "SuccessfulRescale") {
		t.Errorf("events: %s", events)
	}
	waitFor(t, 4*time.Minute, "the autoscaler to scale back down once the pods idle", func() error {
		d, err := s.getJSON(t, "deployment", "burn")
		if err != nil {
			return err
		}
		if n, _ := field(d, "spec.replicas").(float64); n != 1 {
			return fmt.Errorf("replicas %v", n)
		}
		return nil
	})
	if out := s.kubectl(t, "describe", "hpa", "burn"); !strings.Contains(out, "All metrics below target") && !strings.Contains(out, "ValidMetricFound") {
		t.Errorf("kubectl describe hpa: %s", out)
	}
}
