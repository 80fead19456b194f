package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/berth-dev/berth/testtool"
)

// TestKubectlRunAndAttach drives the real kubectl against a server and an
// agent: kubectl run -i with piped input gets the container's output back
// and its exit code, over a WebSocket and over SPDY, and --rm deletes the
// pod; kubectl attach prints what a running pod writes; kubectl attach -i
// and berth attach -i write to a container's input; and kubectl run -it
// on a terminal runs a shell on a terminal of kubectl's size.
func TestKubectlRunAndAttach(t *testing.T) {
	testtool.Need(t, "kubectl")
	s := startServer(t)
	startAgent(t, s, "att", "127.0.0.47")

	t.Run("run -i --rm", func(t *testing.T) {
		cmd := s.command(t, "kubectl", "run", "-i", "--rm", "piped", "--image=busybox", "--restart=Never", "--", "sh", "-c", "read x; echo got $x")
		cmd.Stdin = strings.NewReader("hi\n")
		var stderr testtool.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), "got hi\n") {
			t.Fatalf("kubectl run -i: %v\nstdout %q\nstderr %q", err, out, stderr.String())
		}
		waitPodGone(t, s, "piped")

		// The container's exit code is kubectl's, read from the pod.
		cmd = s.command(t, "kubectl", "run", "-i", "--rm", "failing", "--image=busybox", "--restart=Never", "--", "sh", "-c", "read x; echo $x >&2; exit 3")
		cmd.Stdin = strings.NewReader("oops\n")
		out, err = cmd.CombinedOutput()
		if code := exitCode(err); code != 3 || !strings.Contains(string(out), "oops") {
			t.Errorf("kubectl run -i of a container that exits 3: exit %d\n%s", code, out)
		}
		waitPodGone(t, s, "failing")

		// kubectl's fallback, SPDY, the only protocol before 1.30.
		cmd = s.command(t, "kubectl", "run", "-i", "--rm", "fallback", "--image=busybox", "--restart=Never", "--", "sh", "-c", "read x; echo got $x over SPDY")
		cmd.Env = append(os.Environ(), "KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false")
		cmd.Stdin = strings.NewReader("hi\n")
		out, err = cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "got hi over SPDY\n") {
			t.Errorf("kubectl run -i over SPDY: %v\n%s", err, out)
		}
		waitPodGone(t, s, "fallback")
	})

	t.Run("attach", func(t *testing.T) {
		s.applyText(t, `apiVersion: v1
kind: Pod
metadata: {name: ticker}
spec:
  containers:
  - name: ticker
    image: busybox
    command: [sh, -c, 'i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.1; done']
---
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  containers:
  - name: reader
    image: busybox
    stdin: true
    command: [sh, -c, 'while read line; do echo "read $line"; done']
`)
		s.kubectl(t, "wait", "--for=condition=Ready", "pod/ticker", "pod/reader", "--timeout=60s")

		// Without -i: what the pod writes from now on.
		cmd := s.command(t, "kubectl", "attach", "ticker")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		for range 3 {
			if !lines.Scan() || !strings.HasPrefix(lines.Text(), "tick ") {
				t.Fatalf("kubectl attach printed %q, %v; want the pod's ticks", lines.Text(), lines.Err())
			}
		}
		cmd.Process.Kill()
		cmd.Wait()

		// With -i: the input goes to the container's, and its end ends
		// the session, the container running on.
		for _, tool := range []string{"kubectl", "berth"} {
			cmd = s.command(t, tool, "attach", "-i", "reader")
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var out testtool.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			testtool.SayUntil(t, time.Minute, in, "hello from "+tool+"\n", &out, "read hello from "+tool)
			in.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("%s attach -i: %v\n%s", tool, err, out.String())
			}
			if phase := s.kubectl(t, "get", "pod", "reader", "-o", "jsonpath={.status.phase}"); phase != "Running" {
				t.Errorf("the reader pod is %s after %s attach, want Running", phase, tool)
			}
		}
	})

	t.Run("run -it", func(t *testing.T) {
		cmd := s.command(t, "kubectl", "run", "-it", "--rm", "shell", "--image=busybox", "--restart=Never", "--", "sh")
		term, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
		if err != nil {
			t.Fatal(err)
		}
		defer term.Close()
		var out testtool.Buffer
		copied := make(chan struct{})
		go func() {
			io.Copy(&out, term)
			close(copied)
		}()
		waitOutput(t, &out, "If you don't see a command prompt")
		// kubectl sends the terminal's size on a stream of its own,
		// beside the input: on a loaded machine the shell may read a
		// command before the size is set (it then says 0 0), as
		// against a kubelet. Ask again until the size has come.
		asked := 0
		waitFor(t, time.Minute, "the terminal's size in the container", func() error {
			if strings.Contains(out.String(), "40 100") {
				return nil
			}
			if n := strings.Count(out.String(), "asked-7"); n < asked {
				return fmt.Errorf("output so far %q", out.String())
			}
			asked++
			if _, err := io.WriteString(term, "stty size; echo asked-$((3+4))\r"); err != nil {
				t.Fatal(err)
			}
			return fmt.Errorf("output so far %q", out.String())
		})
		if _, err := io.WriteString(term, "tty; echo hello-$((1+2))\r"); err != nil {
			t.Fatal(err)
		}
		waitOutput(t, &out, "hello-3")
		if _, err := io.WriteString(term, "exit\r"); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		term.Close()
		<-copied
		got := out.String()
		if err != nil || !strings.Contains(got, "40 100") || !strings.Contains(got, "/dev/pts/") {
			t.Errorf("kubectl run -it: %v; want a terminal of 40 rows and 100 columns:\n%s", err, got)
		}
		waitPodGone(t, s, "shell")
	})
}

// waitOutput waits until out holds want.
func waitOutput(t *testing.T, out *testtool.Buffer, want string) {
	t.Helper()
	waitFor(t, time.Minute, fmt.Sprintf("%q on the terminal", want), func() error {
		if !strings.Contains(out.String(), want) {
			return fmt.Errorf("output so far %q", out.String())
		}
		return nil
	})
}

// waitPodGone waits until the pod is deleted.
func waitPodGone(t *testing.T, s *server, name string) {
	t.Helper()
	waitFor(t, time.Minute, "pod "+name+" deleted", func() error {
		out, err := s.kubectlErr(t, "get", "pod", name, "-o", "name")
		if err == nil {
			return errors.New("still there: " + out)
		}
		if !strings.Contains(out, "NotFound") {
			return errors.New(out)
		}
		return nil
	})
}
