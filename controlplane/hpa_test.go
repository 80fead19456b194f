package controlplane_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// TestAutoscaleWithKubectl makes an autoscaler with kubectl autoscale
// (which speaks autoscaling/v1) and reads it back with kubectl get and
// describe (autoscaling/v2): with no node, hence no metrics, the
// controller says so in ScalingActive, and the target is brought to the
// autoscaler's minimum.
func TestAutoscaleWithKubectl(t *testing.T) {
	s, run := startWithKubectl(t)
	if out, err := run("create", "deployment", "web", "--image=busybox", "--replicas=1", "--", "sleep", "1000"); err != nil {
		t.Fatalf("kubectl create deployment: %v\n%s", err, out)
	}
	if out, err := run("autoscale", "deployment", "web", "--cpu-percent=50", "--min=2", "--max=4"); err != nil || !strings.Contains(out, "autoscaled") {
		t.Fatalf("kubectl autoscale: %v\n%s", err, out)
	}
	hpaKind := api.MustLookupResource("horizontalpodautoscalers")
	var hpa *api.HorizontalPodAutoscaler
	testtool.WaitFor(t, time.Minute, "the autoscaler's status", func() error {
		obj, err := s.Store().Get(hpaKind, "default", "web")
		if err != nil {
			return err
		}
		hpa = obj.(*api.HorizontalPodAutoscaler)
		if hpa.Status.DesiredReplicas != 2 {
			return fmt.Errorf("status %+v", hpa.Status)
		}
		return nil
	})
	if m := hpa.Spec.Metrics; len(m) != 1 || m[0].Resource == nil || *m[0].Resource.Target.AverageUtilization != 50 {
		t.Errorf("metrics from autoscaling/v1: %+v", m)
	}
	if n := *hpa.Spec.MinReplicas; n != 2 {
		t.Errorf("minReplicas %d", n)
	}
	deploy, err := s.Store().Get(api.MustLookupResource("deployments"), "default", "web")
	if err != nil || *deploy.(*api.Deployment).Spec.Replicas != 2 {
		t.Fatalf("deployment after the autoscaler: %v %v", deploy, err)
	}
	out, err := run("get", "hpa")
	if err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "), "web Deployment/web cpu: <unknown>/50% 2 4 1") {
		t.Errorf("kubectl get hpa: %v\n%s", err, out)
	}
	testtool.WaitFor(t, time.Minute, "ScalingActive", func() error {
		out, err = run("describe", "hpa", "web")
		if err != nil || !strings.Contains(out, "FailedGetResourceMetric") {
			return fmt.Errorf("kubectl describe hpa: %v\n%s", err, out)
		}
		return nil
	})
	out, err = run("get", "--raw", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web")
	if err != nil || !strings.Contains(out, `"apiVersion":"autoscaling/v1"`) || !strings.Contains(out, `"targetCPUUtilizationPercentage":50`) {
		t.Errorf("the autoscaler as autoscaling/v1: %v\n%s", err, out)
	}
}
