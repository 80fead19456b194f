package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

func podScheduled(pod map[string]any) (status, reason, message string) {
	conds, _ := field(pod, "status.conditions").([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "PodScheduled" {
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			message, _ = m["message"].(string)
		}
	}
	return status, reason, message
}

func TestUnschedulablePodWaitsForAMatchingNode(t *testing.T) {
	testtool.Need(t, "kubectl")
	s := startServer(t)
	// kubectl create keeps a Node's status, as a registering agent's would.
	s.kubectl(t, "create", "-f", "testdata/plain-node.json")
	s.mustBerth(t, "apply", "-f", "testdata/ssd-pod.yaml")
	const want = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	waitFor(t, 10*time.Second, "PodScheduled=False", func() error {
		pod, err := s.getJSON(t, "pod", "wants-ssd")
		if err != nil {
			return err
		}
		status, reason, message := podScheduled(pod)
		if status != "False" || reason != "Unschedulable" || message != want {
			return fmt.Errorf("PodScheduled %s %s %q", status, reason, message)
		}
		return nil
	})

	s.kubectl(t, "create", "-f", "testdata/ssd-node.json")
	start := time.Now()
	waitFor(t, 10*time.Second, "the pod bound to the new node", func() error {
		pod, err := s.getJSON(t, "pod", "wants-ssd")
		if err != nil {
			return err
		}
		if node := field(pod, "spec.nodeName"); node != "fast-1" {
			return fmt.Errorf("nodeName %v", node)
		}
		return nil
	})
	t.Logf("bound %v after the node was created", time.Since(start))
}

// preemptionYAML is two PriorityClasses and a pod of the low one that
// takes most of a one-CPU node.
const preemptionYAML = `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Pod
metadata: {name: batch}
spec:
  priorityClassName: low
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: sleeper
    command: [sh, -c, "exec sleep 100000"]
    resources: {requests: {cpu: 800m}}
`

// urgentYAML is a pod of the high class that fits the node only without
// the low one.
const urgentYAML = `apiVersion: v1
kind: Pod
metadata: {name: urgent}
spec:
  priorityClassName: high
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: sleeper
    command: [sh, -c, "exec sleep 100000"]
    resources: {requests: {cpu: 800m}}
`

// TestHighPriorityPodPreemptsALowOne: on a node whose CPU a low-priority
// pod holds, a high-priority pod that does not fit preempts it, as
// kube-scheduler's DefaultPreemption does: the victim is marked
// DisruptionTarget, gets a Preempted event and is stopped by its agent,
// and the preemptor, nominated to the node, runs there.
func TestHighPriorityPodPreemptsALowOne(t *testing.T) {
	s := startServer(t)
	startAgent(t, s, "n1", "127.0.0.87", "--capacity", "cpu=1,memory=2Gi,pods=110")
	s.applyText(t, preemptionYAML)
	waitPodRunning := func(name string) map[string]any {
		t.Helper()
		var pod map[string]any
		waitFor(t, 60*time.Second, name+" running on n1", func() error {
			var err error
			if pod, err = s.getJSON(t, "pod", name); err != nil {
				return err
			}
			if node, phase := field(pod, "spec.nodeName"), field(pod, "status.phase"); node != "n1" || phase != "Running" {
				return fmt.Errorf("node %v, phase %v", node, phase)
			}
			return nil
		})
		return pod
	}
	batch := waitPodRunning("batch")
	if p := field(batch, "spec.priority"); p != float64(100) {
		t.Errorf("batch's priority %v, want the class's 100", p)
	}

	s.applyText(t, urgentYAML)
	// The victim goes: marked, then deleted once its agent stopped it.
	sawTarget := false
	waitFor(t, 90*time.Second, "batch preempted and gone", func() error {
		pod, err := s.getJSON(t, "pod", "batch")
		if err != nil {
			if strings.Contains(err.Error(), "NotFound") || strings.Contains(err.Error(), "not found") {
				return nil
			}
			return err
		}
		conds, _ := field(pod, "status.conditions").([]any)
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "DisruptionTarget" && m["status"] == "True" && m["reason"] == "PreemptionByScheduler" {
				sawTarget = true
			}
		}
		return fmt.Errorf("batch still there (DisruptionTarget seen: %v)", sawTarget)
	})
	urgent := waitPodRunning("urgent")
	if nominated := field(urgent, "status.nominatedNodeName"); nominated != nil && nominated != "n1" {
		t.Errorf("urgent nominated to %v", nominated)
	}
	events, err := s.getJSON(t, "events")
	if err != nil {
		t.Fatal(err)
	}
	items, _ := events["items"].([]any)
	found := false
	for _, e := range items {
		ev, _ := e.(map[string]any)
		if ev["reason"] == "Preempted" && field(ev, "involvedObject.name") == "batch" && strings.HasPrefix(fmt.Sprint(ev["message"]), "Preempted by pod ") && strings.HasSuffix(fmt.Sprint(ev["message"]), " on node n1") {
			found = true
		}
	}
	if !found {
		t.Errorf("no Preempted event for batch among %v", items)
	}
}
