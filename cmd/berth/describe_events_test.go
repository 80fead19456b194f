package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

const replicaSetManifest = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: web:1
`

// A real control plane records the ReplicaSet controller's events, and
// describe shows them in kubectl's Events table.
func TestDescribeShowsRecordedEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	kubeconfig := startSourcedControlPlane(t)
	if r := runBerth(t, replicaSetManifest, "apply", "-f", "-", "--kubeconfig", kubeconfig); r.code != exitOK {
		t.Fatalf("apply: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	header := regexp.MustCompile(`(?m)^Events:\n  Type +Reason +Age +From +Message\n  ---- +------ +---- +---- +-------\n`)
	created := regexp.MustCompile(`(?m)^  Normal +SuccessfulCreate +\S+ +replicaset-controller +Created pod: web-[a-z0-9]{5}$`)
	testtool.WaitFor(t, 20*time.Second, "describe with two SuccessfulCreate events", func() error {
		r := runBerth(t, "", "describe", "rs", "web", "--kubeconfig", kubeconfig)
		if r.code != exitOK {
			return fmt.Errorf("exit %d: %s", r.code, r.stderr)
		}
		if !header.MatchString(r.stdout) || len(created.FindAllString(r.stdout, -1)) != 2 {
			return fmt.Errorf("describe:\n%s", r.stdout)
		}
		return nil
	})
	// A pod's events are the scheduler's: no node, so FailedScheduling.
	r := runBerth(t, "", "get", "pods", "-o", "name", "--kubeconfig", kubeconfig)
	pod := strings.TrimPrefix(strings.Fields(r.stdout)[0], "pod/")
	testtool.WaitFor(t, 20*time.Second, "describe pod with FailedScheduling", func() error {
		r := runBerth(t, "", "describe", "pod", pod, "--kubeconfig", kubeconfig)
		if !strings.Contains(r.stdout, "Warning  FailedScheduling") || !strings.Contains(r.stdout, "default-scheduler  no nodes available to schedule pods") {
			return fmt.Errorf("describe:\n%s", r.stdout)
		}
		return nil
	})
}
