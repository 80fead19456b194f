package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// budgetYAML is a PodDisruptionBudget for the pods of app.
func budgetYAML(app string, minAvailable int) string {
	return fmt.Sprintf(`apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: %[1]s
spec:
  minAvailable: %[2]d
  selector:
    matchLabels: {app: %[1]s}
`, app, minAvailable)
}

// budgetIs is a condition for waitFor: the disruption controller counted
// the budget's pods as want (allowed disruptions, current and desired
// healthy pods) for its current spec.
func budgetIs(t testing.TB, s *server, name string, allowed, current, desired int) func() error {
	return func() error {
		b, err := s.getJSON(t, "pdb", name)
		if err != nil {
			return err
		}
		got := fmt.Sprint(field(b, "status.disruptionsAllowed"), field(b, "status.currentHealthy"), field(b, "status.desiredHealthy"))
		if want := fmt.Sprint(allowed, current, desired); got != want || field(b, "status.observedGeneration") != field(b, "metadata.generation") {
			return fmt.Errorf("allowed, current, desired %s, want %s (observed %v of %v)", got, want,
				field(b, "status.observedGeneration"), field(b, "metadata.generation"))
		}
		return nil
	}
}

// TestDrainHonoursBudget: kubectl drain evicts through pods/eviction, so a
// Deployment of 2 under a budget of minAvailable 2 loses no pod (drain
// retries on the 429 until its timeout and names the budget), and under
// minAvailable 1 loses exactly one, the other refused as long as the
// first one's replacement cannot run (the node is cordoned).
func TestDrainHonoursBudget(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	startAgent(t, s, "n1", "127.0.0.35")
	s.applyText(t, sleeperDeployment("web", 2, "v1"))
	waitFor(t, 60*time.Second, "2 ready pods", readyIs(t, s, "web", 2))
	before, err := readyPods(t, s, "web")
	if err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(t.TempDir(), "budget.yaml")
	writeFile(t, path, budgetYAML("web", 2))
	s.kubectl(t, "apply", "-f", path)
	waitFor(t, 30*time.Second, "the budget counted", budgetIs(t, s, "web", 0, 2, 2))
	if out := s.kubectl(t, "get", "pdb"); !strings.Contains(out, "MIN AVAILABLE") || !strings.Contains(out, "ALLOWED DISRUPTIONS") {
		t.Errorf("kubectl get pdb:\n%s", out)
	}

	out, err := s.kubectlErr(t, "drain", "n1", "--ignore-daemonsets", "--timeout=12s")
	t.Logf("kubectl drain under minAvailable 2:\n%s", out)
	if err == nil {
		t.Fatalf("kubectl drain passed a budget that allows no disruption:\n%s", out)
	}
	if !strings.Contains(out, "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Errorf("kubectl drain does not name the budget:\n%s", out)
	}
	if strings.Contains(out, "evicted") {
		t.Errorf("kubectl drain evicted a pod:\n%s", out)
	}
	if after, err := readyPods(t, s, "web"); err != nil || !maps.Equal(after, before) {
		t.Fatalf("the pods changed under a budget of 2: %v, then %v (%v)", before, after, err)
	}

	writeFile(t, path, budgetYAML("web", 1))
	s.kubectl(t, "apply", "-f", path)
	waitFor(t, 30*time.Second, "the budget counted again", budgetIs(t, s, "web", 1, 2, 1))
	out, err = s.kubectlErr(t, "drain", "n1", "--ignore-daemonsets", "--timeout=12s")
	t.Logf("kubectl drain under minAvailable 1:\n%s", out)
	if err == nil {
		t.Fatalf("kubectl drain emptied the node past a budget of 1:\n%s", out)
	}
	if n := strings.Count(out, " evicted"); n != 1 {
		t.Errorf("kubectl drain evicted %d pods, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "disruption budget") {
		t.Errorf("kubectl drain does not name the budget for the second pod:\n%s", out)
	}
	var left []string
	waitFor(t, 30*time.Second, "one of the two pods left", func() error {
		pods, err := podsOf(t, s, "web")
		if err != nil {
			return err
		}
		left = left[:0]
		for _, p := range pods {
			name, _ := field(p, "metadata.name").(string)
			if _, ok := before[name]; ok {
				left = append(left, name)
			}
		}
		if len(left) != 1 {
			return fmt.Errorf("left %v of %v", left, slices.Sorted(maps.Keys(before)))
		}
		return nil
	})
	waitFor(t, 30*time.Second, "the budget at its floor", budgetIs(t, s, "web", 0, 1, 1))
}

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
