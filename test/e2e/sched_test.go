package e2e

import (
	"fmt"
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
