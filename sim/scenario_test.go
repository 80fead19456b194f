package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// TestRunMix checks that the mix's constraints hold in the placement: the
// node selector, the taint only for pods that tolerate it, one pod a node
// for the anti-affinity ReplicaSet.
func TestRunMix(t *testing.T) {
	var progress bytes.Buffer
	const nodes, pods = 20, 320
	opts := Options{Nodes: nodes, Pods: pods, ReplicaSets: 16, Mix: true, Progress: &progress, Timeout: 2 * time.Minute}
	var inspected bool
	res, err := run(context.Background(), opts, func(s *store.Store) {
		inspected = true
		checkCapacity(t, s, nodes, pods)
		nodeObjs, _, err := s.List(nodeKind, store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*api.Node{}
		for _, o := range nodeObjs {
			byName[o.GetName()] = o.(*api.Node)
		}
		podObjs, _, err := s.List(podKind, store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		perNode := map[string]map[string]int{} // owner → node → pods
		seen := map[int]int{}                  // constraint → pods
		for _, o := range podObjs {
			p := o.(*api.Pod)
			n := byName[p.Spec.NodeName]
			if n == nil {
				t.Fatalf("pod %s on unknown node %q", p.Name, p.Spec.NodeName)
			}
			owner := p.OwnerReferences[0].Name
			tainted := len(n.Spec.Taints) > 0
			switch {
			case p.Spec.NodeSelector != nil:
				seen[1]++
				if n.Labels[DiskLabel] != "ssd" {
					t.Errorf("pod %s (node selector) on %s, labels %v", p.Name, n.Name, n.Labels)
				}
			case p.Spec.Affinity != nil:
				seen[2]++
				if perNode[owner] == nil {
					perNode[owner] = map[string]int{}
				}
				if perNode[owner][n.Name]++; perNode[owner][n.Name] > 1 {
					t.Errorf("two pods of %s (anti-affinity) on %s", owner, n.Name)
				}
			case len(p.Spec.Tolerations) > 0:
				seen[3]++
			default:
				seen[0]++
			}
			if tainted && len(p.Spec.Tolerations) == 0 {
				t.Errorf("pod %s without the toleration on tainted node %s", p.Name, n.Name)
			}
		}
		for c := range 4 {
			if seen[c] == 0 {
				t.Errorf("no pod of constraint %d: %v", c, seen)
			}
		}
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if !inspected || res.Scheduled != pods {
		t.Fatalf("result %+v", res)
	}
}

// TestRollout runs the rollout scenario: the Deployment reaches every
// replica on the new image and availability never went under replicas −
// maxUnavailable.
func TestRollout(t *testing.T) {
	var progress bytes.Buffer
	opts := Options{Nodes: 10, Pods: 40, Scenario: ScenarioRollout, Progress: &progress, Timeout: 2 * time.Minute}
	measured := false
	opts.Measured = func() { measured = true }
	res, err := run(context.Background(), opts, func(s *store.Store) {
		// The agents finish the deletion of the old pods.
		testtool.WaitFor(t, 30*time.Second, "old pods deleted", func() error {
			pods, _, err := s.List(podKind, store.Filter{Predicate: func(o api.Object) bool { return o.GetDeletionTimestamp() != nil }})
			if err != nil || len(pods) > 0 {
				return fmt.Errorf("%d pods being deleted (%v)", len(pods), err)
			}
			return nil
		})
		pods, _, err := s.List(podKind, store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		live := 0
		for _, o := range pods {
			p := o.(*api.Pod)
			if p.DeletionTimestamp != nil {
				continue
			}
			live++
			if p.Spec.Containers[0].Image != "web:2.0" || !podAvailable(p) {
				t.Errorf("pod %s: image %s, available %v", p.Name, p.Spec.Containers[0].Image, podAvailable(p))
			}
		}
		if live != 40 {
			t.Errorf("%d pods after the rollout, want 40", live)
		}
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if !measured {
		t.Error("Measured was not called")
	}
	if res.CreateSeconds <= 0 || res.RolloutSeconds <= 0 || res.AvailabilityRevisions == 0 {
		t.Errorf("implausible result %+v", res)
	}
	// 25% of 40.
	if res.AvailabilityBound != 30 {
		t.Errorf("bound %d, want 30", res.AvailabilityBound)
	}
	if res.MinAvailable == nil || *res.MinAvailable < res.AvailabilityBound || *res.MinAvailable > 40 {
		t.Errorf("least available pods %v, bound %d", res.MinAvailable, res.AvailabilityBound)
	}
	if res.MinStatusAvailable == nil || *res.MinStatusAvailable < res.AvailabilityBound {
		t.Errorf("least status.availableReplicas %v, bound %d", res.MinStatusAvailable, res.AvailabilityBound)
	}
	jsonKeys(t, res, "nodes", "pods", "peak_rss_mb", "create_seconds", "rollout_seconds", "min_available",
		"min_status_available", "availability_bound", "availability_revisions")
}

// jsonKeys checks that res's JSON line has exactly the keys want: a
// scenario's line carries what it measured and nothing it left at 0.
func jsonKeys(t *testing.T, res *Result, want ...string) {
	t.Helper()
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(m))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("JSON line keys %v, want %v: %s", got, want, data)
	}
}

// TestJob runs the job scenario: the Job of 60 completions, 8 at a time,
// completes, each pod ended Succeeded by its hollow agent and counted
// once.
func TestJob(t *testing.T) {
	var progress bytes.Buffer
	opts := Options{Nodes: 4, Pods: 60, Parallelism: 8, Scenario: ScenarioJob, Progress: &progress, Timeout: 2 * time.Minute}
	res, err := run(context.Background(), opts, func(s *store.Store) {
		pods, _, err := s.List(podKind, store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) != 60 {
			t.Errorf("%d pods made, want 60", len(pods))
		}
		for _, o := range pods {
			if p := o.(*api.Pod); p.Status.Phase != api.PodSucceeded || len(p.Finalizers) > 0 {
				t.Errorf("pod %s: %s, finalizers %v", p.Name, p.Status.Phase, p.Finalizers)
			}
		}
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if res.CompleteSeconds <= 0 || res.Scheduled != 60 || res.PodsPerSecond <= 0 {
		t.Errorf("implausible result %+v", res)
	}
	jsonKeys(t, res, "nodes", "pods", "scheduled", "running", "pods_per_second", "peak_rss_mb", "complete_seconds")
}

// TestRunDaemonSet: the daemonset scenario puts one pod on every hollow
// node, each bound to the node its affinity names.
func TestRunDaemonSet(t *testing.T) {
	var progress bytes.Buffer
	opts := Options{Nodes: 12, Pods: 1, Scenario: ScenarioDaemonSet, Progress: &progress, Timeout: 2 * time.Minute}
	res, err := run(context.Background(), opts, func(s *store.Store) {
		pods, _, err := s.List(podKind, store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		perNode := map[string]int{}
		for _, o := range pods {
			p := o.(*api.Pod)
			perNode[p.Spec.NodeName]++
			terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			if got := terms[0].MatchFields[0].Values[0]; got != p.Spec.NodeName {
				t.Errorf("pod %s for node %s bound to %s", p.Name, got, p.Spec.NodeName)
			}
		}
		if len(perNode) != 12 {
			t.Errorf("pods on %d nodes: %v", len(perNode), perNode)
		}
		for n, c := range perNode {
			if c != 1 {
				t.Errorf("%d pods on %s", c, n)
			}
		}
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if res.Pods != 12 || res.Scheduled != 12 {
		t.Errorf("result %+v", res)
	}
}

// TestRunSpread checks that the spread ReplicaSet's pods keep its
// constraint: no node holds more than one of them over the emptiest.
func TestRunSpread(t *testing.T) {
	var progress bytes.Buffer
	const nodes, pods = 20, 170
	opts := Options{Nodes: nodes, Pods: pods, ReplicaSets: 4, Spread: true, Progress: &progress, Timeout: 2 * time.Minute}
	var inspected bool
	res, err := run(context.Background(), opts, func(s *store.Store) {
		inspected = true
		podObjs, _, err := s.List(podKind, store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		perNode := map[string]int{}
		spread := 0
		for _, o := range podObjs {
			p := o.(*api.Pod)
			if p.OwnerReferences[0].Name != "rs-0" {
				continue
			}
			if len(p.Spec.TopologySpreadConstraints) != 1 {
				t.Fatalf("pod %s of rs-0 without its constraint", p.Name)
			}
			perNode[p.Spec.NodeName]++
			spread++
		}
		lo, hi := pods, 0
		for i := range nodes {
			c := perNode[fmt.Sprintf("hollow-%05d", i)]
			lo, hi = min(lo, c), max(hi, c)
		}
		if spread != 43 || hi-lo > 1 {
			t.Fatalf("rs-0: %d pods, %d to %d a node: %v", spread, lo, hi, perNode)
		}
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if !inspected || res.Scheduled != pods {
		t.Fatalf("inspected %v, result %+v", inspected, res)
	}
}
