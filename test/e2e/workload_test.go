package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: %d
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: example/web:1
`

// TestDeploymentScalesAndIsCollected applies a Deployment of 3 on a cluster
// with one Ready node (no agent: pods are bound but stay Pending), scales it
// to 0 and back, then deletes it and sees its ReplicaSets and pods go.
func TestDeploymentScalesAndIsCollected(t *testing.T) {
	testtool.Need(t, "kubectl")
	s := startServer(t)
	s.kubectl(t, "create", "-f", "testdata/plain-node.json")
	apply := func(replicas int) {
		t.Helper()
		s.applyText(t, fmt.Sprintf(webDeployment, replicas))
	}
	// activePods is nil once n pods of web are active (not being deleted).
	activePods := func(n int) error {
		active, err := podsOf(t, s, "web")
		if err != nil {
			return err
		}
		if len(active) != n {
			return fmt.Errorf("%d active pods", len(active))
		}
		return nil
	}

	apply(3)
	waitFor(t, 20*time.Second, "3 pods bound to slow-1", func() error {
		active, err := podsOf(t, s, "web")
		if err != nil {
			return err
		}
		if len(active) != 3 {
			return fmt.Errorf("%d active pods", len(active))
		}
		for _, p := range active {
			name, _ := field(p, "metadata.name").(string)
			if !strings.HasPrefix(name, "web-") {
				return fmt.Errorf("pod %s not named for its ReplicaSet", name)
			}
			if node := field(p, "spec.nodeName"); node != "slow-1" {
				return fmt.Errorf("pod %s on node %v", name, node)
			}
		}
		return nil
	})
	waitFor(t, 10*time.Second, "deployment status", func() error {
		d, err := s.getJSON(t, "deployment", "web")
		if err != nil {
			return err
		}
		if r, u := field(d, "status.replicas"), field(d, "status.updatedReplicas"); r != 3.0 || u != 3.0 {
			return fmt.Errorf("status replicas %v updated %v", r, u)
		}
		return nil
	})

	apply(0)
	waitFor(t, 20*time.Second, "no active pods", func() error { return activePods(0) })

	apply(3)
	waitFor(t, 20*time.Second, "3 active pods again", func() error { return activePods(3) })

	s.mustBerth(t, "delete", "deployment", "web")
	waitFor(t, 20*time.Second, "the ReplicaSets and pods collected", func() error {
		rss, err := s.getJSON(t, "replicasets")
		if err != nil {
			return err
		}
		if items, _ := rss["items"].([]any); len(items) != 0 {
			return fmt.Errorf("%d replicasets left", len(items))
		}
		// Without an agent, bound pods stay terminating for their grace
		// period; none may stay active.
		return activePods(0)
	})
}

const teamNamespace = `apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: team
data: {mode: fast}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: team
spec:
  replicas: 2
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
      - name: api
        image: example/api:1
`

// TestDeletingANamespaceRemovesEverythingInIt: with no node, the pods stay
// unbound and go at once, so the namespace empties and goes.
func TestDeletingANamespaceRemovesEverythingInIt(t *testing.T) {
	s := startServer(t)
	s.applyText(t, teamNamespace)
	waitFor(t, 20*time.Second, "2 pods in team", func() error {
		list, err := s.getJSON(t, "-n", "team", "pods")
		if err != nil {
			return err
		}
		if items, _ := list["items"].([]any); len(items) != 2 {
			return fmt.Errorf("%d pods", len(items))
		}
		return nil
	})
	s.mustBerth(t, "delete", "namespace", "team")
	waitFor(t, 20*time.Second, "namespace team gone", func() error {
		if _, err := s.getJSON(t, "namespace", "team"); err == nil {
			return fmt.Errorf("namespace still there")
		}
		return nil
	})
	for _, kind := range []string{"pods", "configmaps", "deployments", "replicasets"} {
		list, err := s.getJSON(t, "-n", "team", kind)
		if err != nil {
			t.Fatal(err)
		}
		if items, _ := list["items"].([]any); len(items) != 0 {
			t.Errorf("%d %s left in the deleted namespace", len(items), kind)
		}
	}
}
