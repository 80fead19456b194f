package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// helloPods are the Running pods of the hello example: name → "node ip
// containerID restarts".
func helloPods(t *testing.T, s *server) (map[string]string, error) {
	pods, err := podsOf(t, s, "hello")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pods {
		if field(p, "status.phase") != "Running" {
			continue
		}
		cs, _ := field(p, "status.containerStatuses").([]any)
		id, restarts := "", float64(-1)
		if len(cs) == 1 {
			c := cs[0].(map[string]any)
			id, _ = c["containerID"].(string)
			restarts, _ = c["restartCount"].(float64)
		}
		out[field(p, "metadata.name").(string)] = fmt.Sprintf("%v %v %s %v", field(p, "spec.nodeName"), field(p, "status.podIP"), id, restarts)
	}
	return out, nil
}

// digA answers the A records of a name from the server's DNS.
func digA(t *testing.T, s *server, name string) []string {
	t.Helper()
	dig := testtool.Need(t, "dig")
	out, err := exec.Command(dig, "@127.0.0.1", "-p", fmt.Sprint(s.dnsPort), "+short", "+time=2", "+tries=1", name, "A").CombinedOutput()
	if err != nil {
		t.Fatalf("dig %s: %v\n%s", name, err, out)
	}
	ips := strings.Fields(string(out))
	sort.Strings(ips)
	return ips
}

// TestTheWholeStory runs berth as its README tells: the hello example
// pushed to a git repository, a server with a webhook and its own agent,
// a second agent, and then the life of the application through git.
func TestTheWholeStory(t *testing.T) {
	t.Parallel()
	r := testtool.NewGitRepo(t, "fleet")
	hello, err := os.ReadFile("testdata/hello/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r.Write("hello/hello.yaml", string(hello))
	r.Write("hello/README.md", "the hello example\n")
	first := r.Push("main", "hello")

	secret := "story-s3cret"
	secretFile := filepath.Join(t.TempDir(), "hook-secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	serverArgs := []string{"--source", "git+file://" + r.Bare + "?interval=1h", "--webhook-secret-file", secretFile,
		"--agent=true", "--node-name", "n1", "--node-ip", "127.0.0.11",
		"--agent-listen", fmt.Sprintf("127.0.0.11:%d", freePort(t, "127.0.0.11")),
		"--node-status-update-frequency", "1s"}
	s := startServer(t, serverArgs...)
	// The embedded agent's containers outlive the server process; the test
	// reaps them at the end like any agent's.
	t.Cleanup(func() { reapContainers(t, filepath.Join(s.dataDir, "agent")) })
	waitNodeReady(t, s, "n1", "True")
	startAgent(t, s, "n2", "127.0.0.12")

	// The pods run, one per node (both listen on 8080), and answer.
	var pods map[string]string
	waitFor(t, 60*time.Second, "two hello pods Running", func() error {
		if pods, err = helloPods(t, s); err != nil {
			return err
		}
		if len(pods) != 2 {
			return fmt.Errorf("running: %v", pods)
		}
		return nil
	})
	// Running is not yet listening: the pods answer once they are ready.
	waitFor(t, 30*time.Second, "both pods answering", func() error {
		for name, v := range pods {
			ip := strings.Fields(v)[1]
			if body, err := httpGet("http://" + ip + ":8080/"); err != nil || strings.TrimSpace(body) != "hello from "+name {
				return fmt.Errorf("pod %s at %s: %q %v", name, ip, body, err)
			}
		}
		return nil
	})
	waitFor(t, 20*time.Second, "both pods in DNS", func() error {
		if ips := digA(t, s, "hello.default.svc.cluster.local"); strings.Join(ips, " ") != "127.0.0.11 127.0.0.12" {
			return fmt.Errorf("dig: %v", ips)
		}
		return nil
	})

	// A push that scales to one and changes the text rolls out.
	changed := strings.Replace(strings.Replace(string(hello), "replicas: 2", "replicas: 1", 1), `"hello from $(POD_NAME)"`, `"hi from $(POD_NAME)"`, 1)
	if changed == string(hello) {
		t.Fatal("the example no longer has the lines this test edits")
	}
	r.Write("hello/hello.yaml", changed)
	second := r.Push("main", "one replica, a new greeting")
	if code := s.hook(t, secret, "fleet", true); code != http.StatusAccepted {
		t.Fatalf("webhook: %d", code)
	}
	if _, stderr, code := s.berth(t, "rollout", "status", "deploy/hello", "--timeout", "60s"); code != 0 {
		t.Fatalf("rollout status: %s", stderr)
	}
	waitFor(t, 30*time.Second, "one pod saying hi", func() error {
		if pods, err = helloPods(t, s); err != nil {
			return err
		}
		if len(pods) != 1 {
			return fmt.Errorf("running: %v", pods)
		}
		for name, v := range pods {
			body, err := httpGet("http://" + strings.Fields(v)[1] + ":8080/")
			if err != nil || strings.TrimSpace(body) != "hi from "+name {
				return fmt.Errorf("%s: %q %v", name, body, err)
			}
		}
		return nil
	})
	c := s.client(t)
	if got := s.source(t, c, "fleet").Status.LastAppliedRevision; got != second {
		t.Errorf("applied revision %s, want %s (first was %s)", got, second, first)
	}

	// A broken manifest: the last good revision keeps serving, and the
	// source names the file.
	r.Write("hello/broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\ndata: [1, 2]\n")
	r.Push("main", "a broken manifest")
	s.hook(t, secret, "fleet", true)
	waitFor(t, 20*time.Second, "the source to report the broken file", func() error {
		out, _, _ := s.berth(t, "get", "sources")
		if !strings.Contains(out, "False") {
			return fmt.Errorf("get sources:\n%s", out)
		}
		if out, _, _ := s.berth(t, "describe", "source", "fleet"); !strings.Contains(out, "hello/broken.yaml:doc 0 (line 5): data") {
			return fmt.Errorf("describe source:\n%s", out)
		}
		return nil
	})
	for _, v := range pods {
		if _, err := httpGet("http://" + strings.Fields(v)[1] + ":8080/"); err != nil {
			t.Errorf("the last good revision stopped serving: %v", err)
		}
	}
	r.Git(r.Work, "rm", "--quiet", "hello/broken.yaml")
	r.Push("main", "fix it")
	s.hook(t, secret, "fleet", true)
	waitFor(t, 20*time.Second, "the source Ready again", func() error {
		if st, reason, msg := readyCondition(s.source(t, c, "fleet")); st != "True" {
			return fmt.Errorf("%s %s: %s", st, reason, msg)
		}
		return nil
	})

	// The server restarts (and its agent with it): everything is as it
	// was, and no container was restarted.
	before := pods
	s.stop(syscall.SIGTERM, 20*time.Second)
	url := s.url
	s = startServerIn(t, s.dataDir, append(serverArgs, "--listen", strings.TrimPrefix(url, "https://"))...)
	s.url = url // the last --listen is the one the server took
	waitNodeReady(t, s, "n1", "True")
	waitFor(t, 30*time.Second, "the same pod, same container, after the restart", func() error {
		after, err := helloPods(t, s)
		if err != nil {
			return err
		}
		if fmt.Sprint(after) != fmt.Sprint(before) {
			return fmt.Errorf("before %v, after %v", before, after)
		}
		return nil
	})

	// The files go: the prune guard holds the revision back until allowed.
	r.Git(r.Work, "rm", "--quiet", "hello/hello.yaml")
	r.Push("main", "remove hello")
	s.hook(t, secret, "fleet", true)
	waitFor(t, 20*time.Second, "the prune guard", func() error {
		if _, reason, msg := readyCondition(s.source(t, c, "fleet")); reason != "PruneGuard" {
			return fmt.Errorf("%s: %s", reason, msg)
		}
		return nil
	})
	s.mustBerth(t, "get", "deploy", "hello")
	if out := s.mustBerth(t, "reconcile", "source", "fleet", "--allow-prune"); !strings.Contains(out, "pruned") {
		t.Errorf("reconcile --allow-prune: %s", out)
	}
	waitFor(t, 30*time.Second, "everything pruned and stopped", func() error {
		if _, _, code := s.berth(t, "get", "deploy", "hello"); code == 0 {
			return fmt.Errorf("deploy/hello still there")
		}
		if pods, err := helloPods(t, s); err != nil || len(pods) > 0 {
			return fmt.Errorf("pods %v %v", pods, err)
		}
		return nil
	})
}
