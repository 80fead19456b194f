package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestKubectlExecNamesAnUnreachableAgent stops a pod's agent, first with
// SIGSTOP (its port still accepts, the TLS handshake hangs) and then for
// good, and runs the real kubectl exec and port-forward to the pod: each
// says which agent cannot be reached and why. kubectl retries a failed
// WebSocket upgrade with SPDY and prints only the second answer, so that
// answer must carry the cause too, not a refusal of SPDY.
func TestKubectlExecNamesAnUnreachableAgent(t *testing.T) {
	t.Parallel()
	// The node must stay Ready, and its pod Running, while its agent is
	// stopped: the API server then still sends exec to that agent.
	s := startServer(t, "--node-monitor-grace-period", "10m")
	a := startAgent(t, s, "n65", "127.0.0.65")
	var agentAddr string
	for i, arg := range a.args {
		if arg == "--listen" {
			agentAddr = a.args[i+1]
		}
	}
	port := freePort(t, a.ip)
	s.applyText(t, echoDeployment("far", 1, port, "far away"))
	var name string
	waitFor(t, 60*time.Second, "the far pod Running", func() error {
		pods, err := runningPods(t, s, "far")
		if err != nil {
			return err
		}
		for n := range pods {
			name = n
			return nil
		}
		return fmt.Errorf("no pod running")
	})
	if out := s.kubectl(t, "exec", name, "--request-timeout=60s", "--", "echo", "hi"); out != "hi\n" {
		t.Fatalf("kubectl exec with the agent up: %q", out)
	}

	// kubectl is asked to give up well after the API server would, and
	// s.command kills it in any case.
	tryBoth := func(t *testing.T, cause string) {
		want := fmt.Sprintf("node n65: the agent at %s cannot be reached: ", agentAddr)
		var wg sync.WaitGroup
		for _, args := range [][]string{
			{"exec", name, "--request-timeout=90s", "--", "echo", "hi"},
			{"port-forward", "pod/" + name, "--request-timeout=90s", "--address", "127.0.0.1", fmt.Sprintf(":%d", port)},
		} {
			wg.Go(func() {
				out, err := s.kubectlErr(t, args...)
				if err == nil {
					t.Errorf("kubectl %s succeeded with the agent stopped: %s", args[0], out)
					return
				}
				// kubectl exec shows the Status with its reason,
				// port-forward its message alone.
				if !regexp.MustCompile(regexp.QuoteMeta(want)+".*"+regexp.QuoteMeta(cause)).MatchString(out) ||
					(args[0] == "exec" && !strings.Contains(out, "Error from server (ServiceUnavailable)")) {
					t.Errorf("kubectl %s: %v: %s\nwant the 503 %q…%q", args[0], err, out, want, cause)
				}
				if strings.Contains(out, "takes a WebSocket upgrade") {
					t.Errorf("kubectl %s blames the protocol: %s", args[0], out)
				}
			})
		}
		wg.Wait()
	}

	pid := a.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Run("agent stopped", func(t *testing.T) { tryBoth(t, "net/http: TLS handshake timeout") })
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	a.stop(syscall.SIGKILL, 0)
	t.Run("agent killed", func(t *testing.T) { tryBoth(t, "connection refused") })
}
