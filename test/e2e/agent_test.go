package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/runtime/exec"
)

// agent is a running `berth agent`.
type agent struct {
	*process
	name, ip string
	dataDir  string
	args     []string
}

// startAgent runs an agent joined to s, as node name on ip (a loopback
// address of its own), and waits until its Node is Ready.
func startAgent(t *testing.T, s *server, name, ip string, extra ...string) *agent {
	t.Helper()
	a := &agent{name: name, ip: ip, dataDir: t.TempDir()}
	t.Cleanup(func() { reapContainers(t, a.dataDir) })
	a.args = append([]string{"agent", "--server", s.url,
		"--token-file", filepath.Join(s.dataDir, "node-token"),
		"--ca-file", filepath.Join(s.dataDir, "tls", "ca.crt"),
		"--node-name", name, "--node-ip", ip,
		"--listen", fmt.Sprintf("%s:%d", ip, freePort(t, ip)),
		"--data-dir", a.dataDir,
		"--capacity", "cpu=4,memory=8Gi,pods=110", "--node-status-update-frequency", "1s"}, extra...)
	a.process = start(t, a.args...)
	waitNodeReady(t, s, name, "True")
	return a
}

// reapContainers stops and removes whatever containers an agent left: they
// outlive their agent by design, and must not outlive the test. It runs
// after the agent process has stopped.
func reapContainers(t testing.TB, dataDir string) {
	rt, err := exec.New(exec.Options{Root: filepath.Join(dataDir, "pods")})
	if err != nil {
		t.Errorf("reap containers of %s: %v", dataDir, err)
		return
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runs, err := rt.List(ctx)
	if err != nil {
		t.Errorf("reap containers of %s: %v", dataDir, err)
		return
	}
	for _, r := range runs {
		if err := rt.Stop(ctx, r.ID, 0); err != nil {
			t.Errorf("stop %s: %v", r.ID, err)
		}
		if err := rt.Remove(ctx, r.ID); err != nil {
			t.Errorf("remove %s: %v", r.ID, err)
		}
	}
}

// restart starts the agent again on the same data dir and flags.
func (a *agent) restart(t *testing.T) {
	t.Helper()
	a.process = start(t, a.args...)
}

func waitNodeReady(t testing.TB, s *server, name, want string) {
	t.Helper()
	waitFor(t, 30*time.Second, "node "+name+" Ready="+want, func() error {
		n, err := s.getJSON(t, "node", name)
		if err != nil {
			return err
		}
		conds, _ := field(n, "status.conditions").([]any)
		for _, c := range conds {
			c := c.(map[string]any)
			if c["type"] == "Ready" {
				if c["status"] == want {
					return nil
				}
				return fmt.Errorf("Ready=%v (%v)", c["status"], c["reason"])
			}
		}
		return fmt.Errorf("no Ready condition")
	})
}

// runningPods lists the Running pods of app=name with their node and IP.
func runningPods(t testing.TB, s *server, app string) (map[string]string, error) {
	return podsWhere(t, s, app, func(p map[string]any) bool { return field(p, "status.phase") == "Running" })
}

// waitRunning waits until n pods of app are Running.
func waitRunning(t testing.TB, s *server, app string, n int, what string) {
	t.Helper()
	waitFor(t, 60*time.Second, what, func() error {
		pods, err := runningPods(t, s, app)
		if err != nil {
			return err
		}
		if len(pods) != n {
			return fmt.Errorf("running: %v", pods)
		}
		return nil
	})
}

// readyPods lists the pods of app=name whose Ready condition is True: their
// readiness probe passed, so they answer.
func readyPods(t testing.TB, s *server, app string) (map[string]string, error) {
	return podsWhere(t, s, app, func(p map[string]any) bool {
		conds, _ := field(p, "status.conditions").([]any)
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["type"] == "Ready" {
				return c["status"] == "True"
			}
		}
		return false
	})
}

// podsWhere lists the pods of app=name that keep holds for, with their node
// and IP.
func podsWhere(t testing.TB, s *server, app string, keep func(map[string]any) bool) (map[string]string, error) {
	pods, err := podsOf(t, s, app)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pods {
		if !keep(p) {
			continue
		}
		name, _ := field(p, "metadata.name").(string)
		node, _ := field(p, "spec.nodeName").(string)
		ip, _ := field(p, "status.podIP").(string)
		out[name] = node + " " + ip
	}
	return out, nil
}

// deploymentYAML is a Deployment of replicas pods labelled app=name, whose
// pod spec is podSpec: its lines, each indented by six spaces.
func deploymentYAML(name string, replicas int, podSpec string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  replicas: %d
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
%[3]s`, name, replicas, podSpec)
}

func echoDeployment(name string, replicas, port int, text string) string {
	return deploymentYAML(name, replicas, fmt.Sprintf(`      terminationGracePeriodSeconds: 5
      containers:
      - name: echo
        image: berth
        command: [%[1]q, toolbox, http-echo, --listen, "$(POD_IP):%[2]d", --text, %[3]q]
        env:
        - name: POD_IP
          valueFrom: {fieldRef: {fieldPath: status.podIP}}
        ports:
        - {name: http, containerPort: %[2]d}
        readinessProbe:
          httpGet: {path: /, port: http}
          periodSeconds: 1
`, bin, port, text))
}

func httpGet(url string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func TestAgentsRunPodsAndHealAfterANodeDies(t *testing.T) {
	s := startServer(t, "--node-monitor-period", "1s", "--node-monitor-grace-period", "4s", "--pod-eviction-timeout", "2s")
	// Under the exec runtime pods share their node's network, so two
	// replicas of one port need two nodes: the third takes over.
	agents := map[string]*agent{}
	for i, name := range []string{"n2", "n3", "n4"} {
		agents[name] = startAgent(t, s, name, fmt.Sprintf("127.0.0.%d", i+2))
	}

	port := freePort(t, "127.0.0.1")
	s.applyText(t, echoDeployment("echo", 2, port, "hello from berth"))

	var pods map[string]string
	waitFor(t, 60*time.Second, "two echo pods Ready, one per node", func() error {
		var err error
		if pods, err = readyPods(t, s, "echo"); err != nil {
			return err
		}
		nodes := map[string]bool{}
		for _, v := range pods {
			nodes[strings.Fields(v)[0]] = true
		}
		if len(pods) != 2 || len(nodes) != 2 {
			return fmt.Errorf("running: %v", pods)
		}
		return nil
	})
	var victim, victimIP, survivor string
	for name, v := range pods {
		f := strings.Fields(v)
		if body, err := httpGet(fmt.Sprintf("http://%s:%d/", f[1], port)); err != nil || !strings.Contains(body, "hello from berth") {
			t.Fatalf("pod %s on %s: %q %v", name, v, body, err)
		}
		if out := s.mustBerth(t, "logs", name); !strings.Contains(out, "http-echo serving") {
			t.Errorf("berth logs %s: %q", name, out)
		}
		if victim == "" {
			victim, victimIP = f[0], f[1]
		} else {
			survivor = f[0]
		}
	}
	spare := ""
	for name := range agents {
		if name != victim && name != survivor {
			spare = name
		}
	}
	waitFor(t, 30*time.Second, "the rollout to finish", func() error {
		_, stderr, code := s.berth(t, "rollout", "status", "deploy/echo", "--timeout", "20s")
		if code != 0 {
			return fmt.Errorf("%s", stderr)
		}
		return nil
	})

	// The victim's agent dies: its pod comes back on the spare node within
	// the grace period, the eviction timeout and 5s.
	agents[victim].stop(syscall.SIGKILL, 0)
	killed := time.Now()
	waitFor(t, 4*time.Second+2*time.Second+5*time.Second, "the pod of "+victim+" Running on "+spare, func() error {
		pods, err := runningPods(t, s, "echo")
		if err != nil {
			return err
		}
		nodes := map[string]bool{}
		for _, v := range pods {
			nodes[strings.Fields(v)[0]] = true
		}
		if !nodes[spare] || !nodes[survivor] {
			return fmt.Errorf("running: %v", pods)
		}
		return nil
	})
	t.Logf("pod back on %s %v after %s was killed", spare, time.Since(killed).Round(100*time.Millisecond), victim)
	waitNodeReady(t, s, victim, "Unknown")

	// The victim comes back: it learns its pod is gone and stops the
	// process that kept serving meanwhile.
	agents[victim].restart(t)
	waitNodeReady(t, s, victim, "True")
	waitFor(t, 20*time.Second, "the old process on "+victim+" to stop", func() error {
		if _, err := httpGet(fmt.Sprintf("http://%s:%d/", victimIP, port)); err == nil {
			return fmt.Errorf("%s:%d still answers", victimIP, port)
		}
		return nil
	})
	s.mustBerth(t, "delete", "deploy", "echo")
}
