package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// TestAgentRestartReadopts kills an agent outright and starts it again on
// the same data dir: it takes its running container back (same process,
// no restart, logs still served) instead of starting another. Then a pod
// that keeps crashing is restarted, counted, and its previous run's
// output is served by `berth logs --previous`.
func TestAgentRestartReadopts(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a := startAgent(t, s, "n2", "127.0.0.2")
	port := freePort(t, a.ip)
	s.applyText(t, echoDeployment("keep", 1, port, "kept across restarts"))

	var name, containerID string
	var pid int
	waitFor(t, 60*time.Second, "the keep pod Running and ready", func() error {
		pods, err := podsOf(t, s, "keep")
		if err != nil {
			return err
		}
		if len(pods) != 1 || field(pods[0], "status.phase") != "Running" {
			return fmt.Errorf("%d pods", len(pods))
		}
		cs := containerStatus(pods[0])
		if cs == nil || cs["ready"] != true {
			return errors.New("not ready")
		}
		name, _ = field(pods[0], "metadata.name").(string)
		containerID, _ = cs["containerID"].(string)
		if n := restartCount(pods[0]); n != 0 {
			return fmt.Errorf("restartCount %d before the agent restarted", n)
		}
		pid, err = containerPID(a.dataDir, containerID)
		return err
	})
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("container pid %d: %v", pid, err)
	}

	a.stop(syscall.SIGKILL, 0)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the container (pid %d) died with its agent: %v", pid, err)
	}
	a.restart(t)
	restarted := time.Now()
	// The new agent serves the log of the run it found: it has taken it in.
	waitFor(t, 30*time.Second, "berth logs through the restarted agent", func() error {
		select {
		case <-a.done:
			return fmt.Errorf("agent exited: %v", a.err)
		default:
		}
		out, stderr, code := s.berth(t, "logs", name)
		if code != 0 || !strings.Contains(out, "http-echo serving") {
			return fmt.Errorf("exit %d: %q %s", code, out, stderr)
		}
		return nil
	})
	// Two heartbeats later the new agent has long since synced its pods:
	// it renews its node's Lease, and the node is Ready.
	waitFor(t, 30*time.Second, "heartbeats of the restarted agent", func() error {
		l, err := s.getJSON(t, "lease", a.name, "-n", "kube-node-lease")
		if err != nil {
			return err
		}
		beat, err := time.Parse(time.RFC3339Nano, fmt.Sprint(field(l, "spec.renewTime")))
		if err != nil || beat.Before(restarted.Add(2*time.Second)) {
			return fmt.Errorf("lease renewed at %v", field(l, "spec.renewTime"))
		}
		n, err := s.getJSON(t, "node", a.name)
		if err != nil {
			return err
		}
		conds, _ := field(n, "status.conditions").([]any)
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["type"] == "Ready" && c["status"] != "True" {
				return fmt.Errorf("Ready=%v", c["status"])
			}
		}
		return nil
	})
	p, err := s.getJSON(t, "pod", name)
	if err != nil {
		t.Fatal(err)
	}
	cs := containerStatus(p)
	switch {
	case field(p, "status.phase") != "Running":
		t.Errorf("after the restart the pod is %v", field(p, "status.phase"))
	case cs == nil || cs["containerID"] != containerID:
		t.Errorf("after the restart the container is %v, want %s", cs["containerID"], containerID)
	case restartCount(p) != 0:
		t.Errorf("after the restart restartCount is %d", restartCount(p))
	}
	if now, err := containerPID(a.dataDir, containerID); err != nil || now != pid {
		t.Errorf("after the restart the container pid is %d (%v), want %d", now, err, pid)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("the adopted container (pid %d) is gone: %v", pid, err)
	}
	if body, err := httpGet(fmt.Sprintf("http://%s:%d/", a.ip, port)); err != nil || !strings.Contains(body, "kept across restarts") {
		t.Errorf("the adopted pod answers %q: %v", body, err)
	}

	// A container that fails at once is restarted, and counted; the run
	// before the current one keeps its output.
	s.applyText(t, `apiVersion: v1
kind: Pod
metadata:
  name: crash
  labels: {app: crash}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 1
  containers:
  - name: crash
    image: berth
    command: [/bin/sh, -c, "echo boom; exit 3"]
`)
	waitFor(t, 90*time.Second, "the crash pod restarted twice", func() error {
		p, err := s.getJSON(t, "pod", "crash")
		if err != nil {
			return err
		}
		if n := restartCount(p); n < 2 {
			return fmt.Errorf("restartCount %d", n)
		}
		return nil
	})
	waitFor(t, 10*time.Second, "berth logs --previous crash", func() error {
		out, stderr, code := s.berth(t, "logs", "crash", "--previous")
		if code != 0 || strings.TrimSpace(out) != "boom" {
			return fmt.Errorf("exit %d: %q %s", code, out, stderr)
		}
		return nil
	})
	if p, err := s.getJSON(t, "pod", "crash"); err == nil {
		last, _ := field(containerStatus(p), "lastState.terminated.exitCode").(float64)
		if last != 3 {
			t.Errorf("lastState of the crash pod: %v", field(containerStatus(p), "lastState"))
		}
	}
	s.mustBerth(t, "delete", "deploy", "keep")
	s.mustBerth(t, "delete", "pod", "crash")
}

// TestAgentRestartSaysWhatItTookOver kills an agent, deletes one of its
// two pods while it is away, and starts it again: at INFO it says once
// that it registered its node at the server, and how many containers it
// adopted and orphans it stopped, so an operator sees that it rejoined.
func TestAgentRestartSaysWhatItTookOver(t *testing.T) {
	s := startServer(t)
	a := startAgent(t, s, "n3", "127.0.0.3")
	for _, name := range []string{"stay", "gone"} {
		s.applyText(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  nodeName: n3
  terminationGracePeriodSeconds: 1
  containers:
  - name: sleep
    image: berth
    command: [/bin/sh, -c, "sleep 3600"]
`, name))
	}
	waitFor(t, 60*time.Second, "both pods Running", func() error {
		for _, name := range []string{"stay", "gone"} {
			p, err := s.getJSON(t, "pod", name)
			if err != nil {
				return err
			}
			if phase := field(p, "status.phase"); phase != "Running" {
				return fmt.Errorf("%s is %v", name, phase)
			}
		}
		return nil
	})
	if !strings.Contains(a.Output(), `msg="registered node" node=n3 server=`+s.url) {
		t.Errorf("the agent did not say it registered:\n%s", a.Output())
	}

	a.stop(syscall.SIGKILL, 0)
	s.mustBerth(t, "delete", "pod", "gone", "--grace-period=0")
	a.restart(t)
	const tookOver = `msg="containers found at start" node=n3 adopted=1 orphans_stopped=1`
	waitFor(t, 30*time.Second, "the restarted agent to say what it took over", func() error {
		if !strings.Contains(a.Output(), tookOver) {
			return errors.New("not logged")
		}
		return nil
	})
	out := a.Output()
	for _, line := range []string{`msg="registered node"`, `msg="containers found at start"`} {
		if n := strings.Count(out, line); n != 1 {
			t.Errorf("%s logged %d times, want once:\n%s", line, n, out)
		}
	}
}

// TestServerEmbeddedAgentOnListenHost runs `berth server` listening on one
// address that is not 127.0.0.1: its embedded agent joins at that address
// (the one the certificate and admin.kubeconfig name), not at loopback
// where nothing listens, and its Node goes Ready.
func TestServerEmbeddedAgentOnListenHost(t *testing.T) {
	const ip = "127.0.0.60"
	dataDir := t.TempDir()
	t.Cleanup(func() { reapContainers(t, filepath.Join(dataDir, "agent")) })
	listen := fmt.Sprintf("%s:%d", ip, freePort(t, ip))
	s := startServerIn(t, dataDir, "--listen", listen, "--agent=true", "--node-name", "listen-host", "--node-ip", ip,
		"--agent-listen", fmt.Sprintf("%s:%d", ip, freePort(t, ip)))
	if kc, _ := os.ReadFile(s.kubeconfig); !strings.Contains(string(kc), "server: https://"+listen) {
		t.Fatalf("admin.kubeconfig does not name https://%s:\n%s", listen, kc)
	}
	waitNodeReady(t, s, "listen-host", "True")
}

// TestServerEmbeddedAgent runs `berth server` with its own agent, as a
// single-machine install does: its Node registers Ready, a pod runs on it,
// and `berth logs` reaches the embedded agent.
func TestServerEmbeddedAgent(t *testing.T) {
	t.Parallel()
	const ip = "127.0.0.6"
	dataDir := t.TempDir()
	// The embedded agent keeps its pods under <data-dir>/agent.
	t.Cleanup(func() { reapContainers(t, filepath.Join(dataDir, "agent")) })
	s := startServerIn(t, dataDir, "--agent=true", "--node-name", "solo", "--node-ip", ip,
		"--agent-listen", fmt.Sprintf("%s:%d", ip, freePort(t, ip)))
	waitNodeReady(t, s, "solo", "True")

	// Other users may pass through the server's data dir to the pods of
	// its agent that run as them, and read nothing the server keeps.
	if st, err := os.Stat(dataDir); err != nil || st.Mode().Perm() != 0o711 {
		t.Errorf("data dir with an agent: %v %v, want mode 0711", st, err)
	}
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && e.Name() != "agent" && fi.Mode().Perm()&0o007 != 0 {
			t.Errorf("%s is open to others: %v", e.Name(), fi.Mode())
		}
	}

	port := freePort(t, ip)
	s.applyText(t, echoDeployment("embedded", 1, port, "hello from the embedded agent"))
	var name string
	waitFor(t, 60*time.Second, "the pod Running on solo", func() error {
		pods, err := runningPods(t, s, "embedded")
		if err != nil {
			return err
		}
		for n, v := range pods {
			if v == "solo "+ip {
				name = n
				return nil
			}
		}
		return fmt.Errorf("running: %v", pods)
	})
	waitFor(t, 20*time.Second, "the pod to answer", func() error {
		body, err := httpGet(fmt.Sprintf("http://%s:%d/", ip, port))
		if err != nil {
			return err
		}
		if !strings.Contains(body, "hello from the embedded agent") {
			return fmt.Errorf("answered %q", body)
		}
		return nil
	})
	if out := s.mustBerth(t, "logs", name); !strings.Contains(out, "http-echo serving") {
		t.Errorf("berth logs %s: %q", name, out)
	}
	// Each line's time, as the agent's runtime read it, and lines since a
	// time: berth and kubectl ask the same of the API.
	stamped := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z .*http-echo serving`)
	if out := s.mustBerth(t, "logs", name, "--timestamps"); !stamped.MatchString(out) {
		t.Errorf("berth logs %s --timestamps: %q", name, out)
	}
	if out := s.kubectl(t, "logs", name, "--timestamps", "--since=1h"); !stamped.MatchString(out) {
		t.Errorf("kubectl logs %s --timestamps --since=1h: %q", name, out)
	}
	if out := s.mustBerth(t, "logs", name, "--since-time", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); out != "" {
		t.Errorf("berth logs %s since an hour from now: %q", name, out)
	}

	// kubectl run puts the command after -- in args; with no image
	// entrypoint under the exec runtime, the args alone run.
	s.kubectl(t, "run", "once", "--image=busybox", "--restart=Never", "--", "/bin/echo", "run by kubectl")
	waitPodSucceeded(t, s, "once")
	if out := s.kubectl(t, "logs", "once"); out != "run by kubectl\n" {
		t.Errorf("kubectl logs once: %q", out)
	}

	// kubectl exec and berth exec run a command beside the pod's process,
	// in its environment, through the API server and the agent: output,
	// input, and the exit code.
	for _, tool := range []string{"kubectl", "berth"} {
		t.Run(tool+" exec", func(t *testing.T) {
			run := func(stdin string, args ...string) (string, int) {
				cmd := s.command(t, tool, append([]string{"exec"}, args...)...)
				cmd.Stdin = strings.NewReader(stdin)
				out, err := cmd.CombinedOutput()
				code := exitCode(err)
				if code < 0 {
					t.Fatalf("%s exec %v: %v", tool, args, err)
				}
				return string(out), code
			}
			if out, code := run("", name, "--", "sh", "-c", "echo out in $(pwd); echo err >&2"); code != 0 || !strings.Contains(out, "out in") || !strings.Contains(out, "err") {
				t.Errorf("exec: exit %d: %q", code, out)
			}
			if out, code := run("piped through\n", "-i", name, "--", "cat"); code != 0 || out != "piped through\n" {
				t.Errorf("exec -i: exit %d: %q", code, out)
			}
			if out, code := run("", "deploy/embedded", "--", "sh", "-c", "exit 3"); code != 3 {
				t.Errorf("exec of a command that exits 3: exit %d: %q", code, out)
			}
		})
	}

	// kubectl port-forward and berth port-forward reach the pod's port
	// through the API server and the agent.
	for _, tool := range []string{"kubectl", "berth"} {
		t.Run(tool+" port-forward", func(t *testing.T) {
			// "Forwarding from 127.0.0.1:LOCAL -> PORT".
			line, stderr := startForLine(t, s.command(t, tool, "port-forward", "pod/"+name, "--address", "127.0.0.1", fmt.Sprintf(":%d", port)))
			m := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> `).FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("%s port-forward said %q, stderr %s", tool, line, stderr.String())
			}
			body, err := httpGet("http://127.0.0.1:" + m[1] + "/")
			if err != nil || !strings.Contains(body, "hello from the embedded agent") {
				t.Errorf("through the forwarded port: %q, %v; stderr %s", body, err, stderr.String())
			}
		})
	}

	// kubectl top reads what the agent samples every 10s: the pod shows
	// once its container has been in two samples.
	t.Run("kubectl top", func(t *testing.T) {
		testtool.Need(t, "kubectl")
		waitFor(t, 45*time.Second, "kubectl top pod to show the pod", func() error {
			out, err := s.kubectlErr(t, "top", "pod", name, "--containers")
			if err != nil || !regexp.MustCompile(name+`\s+echo\s+\d+m\s+\d+Mi`).MatchString(out) {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
		if out := s.kubectl(t, "top", "node", "solo"); !regexp.MustCompile(`solo\s+\d+m\s+\d+%\s+\d+Mi\s+\d+%`).MatchString(out) {
			t.Errorf("kubectl top node: %s", out)
		}
		if out := s.mustBerth(t, "top", "pod", "--containers"); !regexp.MustCompile(name + `\s+echo\s+\d+m\s+\d+Mi`).MatchString(out) {
			t.Errorf("berth top pod --containers: %s", out)
		}
		if out := s.mustBerth(t, "top", "node"); !regexp.MustCompile(`solo\s+\d+m\s+\d+%\s+\d+Mi\s+\d+%`).MatchString(out) {
			t.Errorf("berth top node: %s", out)
		}
	})

	// kubectl drain empties the node before maintenance: it cordons it
	// and deletes its pods (with no eviction API, with DeleteOptions in
	// protobuf), whose processes stop; the replacement waits for uncordon.
	t.Run("kubectl drain", func(t *testing.T) {
		if out := s.kubectl(t, "drain", "solo", "--ignore-daemonsets", "--force", "--timeout=60s"); !strings.Contains(out, "node/solo drained") {
			t.Fatalf("kubectl drain: %s", out)
		}
		if _, err := s.getJSON(t, "pod", name); err == nil {
			t.Fatalf("pod %s is still there after the drain", name)
		}
		if _, err := httpGet(fmt.Sprintf("http://%s:%d/", ip, port)); err == nil {
			t.Fatal("the drained pod still answers")
		}
		// The node controller marks the cordon with its taint, as
		// Kubernetes' does, and takes it away again at uncordon.
		cordonTaint := func(want bool) func() error {
			return func() error {
				out := s.kubectl(t, "get", "node", "solo", "-o", "jsonpath={.spec.taints}")
				if strings.Contains(out, "node.kubernetes.io/unschedulable") != want {
					return fmt.Errorf("taints %s", out)
				}
				return nil
			}
		}
		waitFor(t, 30*time.Second, "the cordoned node tainted unschedulable", cordonTaint(true))
		s.kubectl(t, "uncordon", "solo")
		waitFor(t, 30*time.Second, "the unschedulable taint gone after uncordon", cordonTaint(false))
		waitRunning(t, s, "embedded", 1, "the replacement Running after uncordon")
	})

	// kubectl taint NoExecute drains the node too: the pod, which does
	// not tolerate the taint, is evicted at once, and its replacement
	// waits until the taint is removed.
	t.Run("kubectl taint NoExecute", func(t *testing.T) {
		before, err := runningPods(t, s, "embedded")
		if err != nil || len(before) != 1 {
			t.Fatalf("running before the taint: %v %v", before, err)
		}
		s.kubectl(t, "taint", "node", "solo", "maintenance=now:NoExecute")
		waitFor(t, 60*time.Second, "the pod evicted and its replacement Pending", func() error {
			pods, err := podsWhere(t, s, "embedded", func(map[string]any) bool { return true })
			if err != nil {
				return err
			}
			for name := range before {
				if _, ok := pods[name]; ok {
					return fmt.Errorf("pod %s still there: %v", name, pods)
				}
			}
			if running, err := runningPods(t, s, "embedded"); err != nil || len(running) != 0 {
				return fmt.Errorf("running %v %v", running, err)
			}
			return nil
		})
		if out := s.kubectl(t, "get", "events", "--field-selector", "reason=TaintManagerEviction"); !strings.Contains(out, "maintenance:NoExecute") {
			t.Errorf("no eviction event naming the taint: %s", out)
		}
		s.kubectl(t, "taint", "node", "solo", "maintenance-")
		waitRunning(t, s, "embedded", 1, "the replacement Running once the taint is gone")
	})
	s.mustBerth(t, "delete", "deploy", "embedded")
}

// TestAgentCertificateHint starts an agent whose --server address the
// server's certificate does not cover (the server listens on every address,
// the agent dials one of the loopback addresses beyond 127.0.0.1): the
// retried join says once, at WARN, that --tls-san adds the address, and its
// repeats go to debug.
func TestAgentCertificateHint(t *testing.T) {
	const ip = "127.0.0.62"
	port := freePort(t, "127.0.0.1")
	s := startServer(t, "--listen", fmt.Sprintf(":%d", port))
	a := start(t, "agent", "-v", "--server", fmt.Sprintf("https://%s:%d", ip, port),
		"--token-file", filepath.Join(s.dataDir, "node-token"),
		"--ca-file", filepath.Join(s.dataDir, "tls", "ca.crt"),
		"--node-name", "uncovered", "--node-ip", ip,
		"--listen", fmt.Sprintf("%s:%d", ip, freePort(t, ip)),
		"--data-dir", t.TempDir())
	warn := regexp.MustCompile(`level=WARN msg=retrying .*not ` + regexp.QuoteMeta(ip) + `.*--tls-san adds names and addresses`)
	retried := regexp.MustCompile(`level=DEBUG msg=retrying .*not ` + regexp.QuoteMeta(ip))
	waitFor(t, 30*time.Second, "the join retried with a hint", func() error {
		if n := len(retried.FindAllString(a.Output(), -1)); !warn.MatchString(a.Output()) || n < 2 {
			return fmt.Errorf("hint logged: %v, %d repeats at debug", warn.MatchString(a.Output()), n)
		}
		return nil
	})
	if n := len(warn.FindAllString(a.Output(), -1)); n != 1 {
		t.Errorf("the warning is logged %d times, want once:\n%s", n, a.Output())
	}
}
