package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/testtool"
)

// readyDeployment is a Deployment of 3 pods under the exec runtime whose
// template changes with push, so that every push is a rollout.
func readyDeployment(push int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
      annotations: {push: "%d"}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: sleeper
        command: [sleep, "100000"]
        readinessProbe:
          exec: {command: ["true"]}
          periodSeconds: 1
`, push)
}

// TestGitOpsPushToReady measures push to Ready: a git push, a signed
// webhook, and the Source Ready=True (spec.wait) at the pushed commit
// once its Deployment of 3 pods has rolled out on a real agent (exec
// runtime), over 20 pushes.
func TestGitOpsPushToReady(t *testing.T) {
	if os.Getenv("BERTH_E2E_MEASURE") == "" {
		t.Skip("a measurement of 20 rollouts: set BERTH_E2E_MEASURE=1 to run it")
	}
	r := testtool.NewGitRepo(t, "fleet")
	r.Write("web.yaml", readyDeployment(0))
	first := r.Push("main", "0")
	secretFile := filepath.Join(t.TempDir(), "hook-secret")
	if err := os.WriteFile(secretFile, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--source", "git+file://"+r.Bare+"?interval=1h", "--webhook-secret-file", secretFile)
	startAgent(t, s, "n1", "127.0.0.93")
	c := s.client(t)
	ctx := context.Background()
	src := s.source(t, c, "fleet").DeepCopy()
	src.Spec.Wait = true
	if _, err := c.Update(ctx, src); err != nil {
		t.Fatal(err)
	}
	ready := func(sha string) error {
		src := s.source(t, c, "fleet")
		cond := meta.FindStatusCondition(src.Status.Conditions, api.SourceReady)
		if cond == nil || cond.Status != "True" || src.Status.LastHealthyRevision != sha {
			return fmt.Errorf("revision %q, healthy %q, ready %v", src.Status.LastAppliedRevision, src.Status.LastHealthyRevision, cond)
		}
		return nil
	}
	waitFor(t, 120*time.Second, "the first rollout", func() error { return ready(first) })
	const pushes = 20
	var fromPush []time.Duration
	for i := 1; i <= pushes; i++ {
		r.Write("web.yaml", readyDeployment(i))
		r.Git(r.Work, "add", "-A")
		r.Git(r.Work, "commit", "--quiet", "-m", fmt.Sprint(i))
		sha := r.Git(r.Work, "rev-parse", "HEAD")
		start := time.Now()
		r.Git(r.Work, "push", "--quiet", "origin", "main")
		if code := s.hook(t, "s3cret", "fleet", true); code != http.StatusAccepted {
			t.Fatalf("webhook: %d", code)
		}
		deadline := time.Now().Add(120 * time.Second)
		for ready(sha) != nil {
			if time.Now().After(deadline) {
				t.Fatalf("push %d not Ready within 120s: %v", i, ready(sha))
			}
			time.Sleep(20 * time.Millisecond)
		}
		fromPush = append(fromPush, time.Since(start))
	}
	slices.Sort(fromPush)
	p := func(q float64) time.Duration { return fromPush[min(len(fromPush)-1, int(q*float64(len(fromPush))))] }
	report, _ := json.Marshal(map[string]any{"pushes": pushes,
		"push_to_ready_ms": map[string]float64{"p50": ms(p(0.5)), "p99": ms(p(0.99)), "min": ms(fromPush[0])}})
	t.Logf("push to Ready: %s", report)
}

// TestHundredSources measures one server syncing 100 Sources, each its
// own git repository (polled every 10 minutes, so that at rest nothing
// is fetched): the server's CPU and RSS over 30 s at rest, then during a
// push to all 100 (a commit each and its signed webhook) until every
// Source has applied its new commit.
func TestHundredSources(t *testing.T) {
	if os.Getenv("BERTH_E2E_MEASURE") == "" {
		t.Skip("a measurement of 100 sources: set BERTH_E2E_MEASURE=1 to run it")
	}
	const n = 100
	secretFile := filepath.Join(t.TempDir(), "hook-secret")
	if err := os.WriteFile(secretFile, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	repos := make([]*testtool.GitRepo, n)
	args := []string{"--webhook-secret-file", secretFile}
	for i := range repos {
		repos[i] = testtool.NewGitRepo(t, fmt.Sprintf("app%03d", i))
		repos[i].Write("config.yaml", cmYAML(fmt.Sprintf("app%03d", i), "0"))
		repos[i].Push("main", "0")
		args = append(args, "--source", "git+file://"+repos[i].Bare+"?interval=10m")
	}
	s := startServer(t, args...)
	c := s.client(t)
	ctx := context.Background()
	kind := api.KindOf(&api.Source{})
	synced := func(want func(*api.Source, int) bool) error {
		list, _, err := c.List(ctx, kind, "", client.ListOptions{})
		if err != nil {
			return err
		}
		done := 0
		for _, o := range list {
			src := o.(*api.Source)
			var i int
			fmt.Sscanf(src.Name, "app%03d", &i)
			if want(src, i) {
				done++
			}
		}
		if done < n {
			return fmt.Errorf("%d of %d sources synced", done, n)
		}
		return nil
	}
	heads := make([]string, n)
	for i, r := range repos {
		heads[i] = r.Git(r.Work, "rev-parse", "HEAD")
	}
	atHead := func(src *api.Source, i int) bool {
		c := meta.FindStatusCondition(src.Status.Conditions, api.SourceReady)
		return c != nil && c.Status == "True" && src.Status.LastAppliedRevision == heads[i]
	}
	start := time.Now()
	waitFor(t, 300*time.Second, "the first sync of all", func() error { return synced(atHead) })
	t.Logf("first sync of %d sources: %v", n, time.Since(start))
	pid := s.cmd.Process.Pid
	cpu0, _ := procCPU(pid)
	rest := time.Now()
	var restPeak int64
	for time.Since(rest) < 30*time.Second {
		rss, _ := procRSS(pid)
		restPeak = max(restPeak, rss)
		time.Sleep(time.Second)
	}
	cpu1, _ := procCPU(pid)
	restSpan := time.Since(rest)

	for i, r := range repos {
		r.Write("config.yaml", cmYAML(fmt.Sprintf("app%03d", i), "1"))
		heads[i] = r.Push("main", "1")
	}
	push := time.Now()
	for i := range repos {
		if code := s.hook(t, "s3cret", fmt.Sprintf("app%03d", i), true); code != http.StatusAccepted {
			t.Fatalf("webhook %d: %d", i, code)
		}
	}
	var pushPeak int64
	waitFor(t, 300*time.Second, "the push to all", func() error {
		rss, _ := procRSS(pid)
		pushPeak = max(pushPeak, rss)
		return synced(atHead)
	})
	cpu2, _ := procCPU(pid)
	pushSpan := time.Since(push)
	report, _ := json.Marshal(map[string]any{
		"sources":           n,
		"rest_cpu_percent":  100 * (cpu1 - cpu0).Seconds() / restSpan.Seconds(),
		"rest_rss_mib":      restPeak >> 20,
		"push_all_seconds":  pushSpan.Seconds(),
		"push_cpu_seconds":  (cpu2 - cpu1).Seconds(),
		"push_cpu_percent":  100 * (cpu2 - cpu1).Seconds() / pushSpan.Seconds(),
		"push_peak_rss_mib": pushPeak >> 20,
	})
	t.Logf("100 sources: %s", report)
}

func cmYAML(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  count: %q\n", name, value)
}
