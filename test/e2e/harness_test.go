package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// bin is the berth binary built once for the whole package.
var bin string

// packageDir is this package's directory, where go test starts it.
var packageDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "berth-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "berth")
	if packageDir, err = os.Getwd(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	build := exec.Command("go", "build", "-o", bin, "./cmd/berth")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build berth:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePort is a port of ip that was free a moment ago (testtool.FreePort).
func freePort(t testing.TB, ip string) int {
	t.Helper()
	return testtool.FreePort(t, ip)
}

// process is a berth process the test started; it is stopped at cleanup.
type process struct {
	cmd    *exec.Cmd
	output testtool.Buffer
	done   chan struct{}
	err    error
}

// Output is what the process printed so far.
func (p *process) Output() string { return p.output.String() }

func start(t testing.TB, args ...string) *process {
	t.Helper()
	return startProgram(t, bin, args...)
}

// startProgram is start with another program, one that execs berth (a
// wrapper that sets up a namespace first).
func startProgram(t testing.TB, prog string, args ...string) *process {
	t.Helper()
	p := &process{done: make(chan struct{})}
	p.cmd = exec.Command(prog, args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.output, &p.output
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(syscall.SIGTERM, 10*time.Second)
		if t.Failed() {
			t.Logf("output of berth %s:\n%s", strings.Join(args, " "), p.Output())
		}
	})
	return p
}

// stop signals the process group and waits, killing it after grace.
func (p *process) stop(sig syscall.Signal, grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// server is a running `berth server`.
type server struct {
	*process
	dnsPort    int
	dataDir    string
	url        string
	kubeconfig string
}

// startServer runs `berth server` on a free loopback port with a new data
// dir, plus any extra flags, and waits until it is ready.
func startServer(t testing.TB, extra ...string) *server {
	t.Helper()
	dataDir := t.TempDir()
	return startServerIn(t, dataDir, extra...)
}

func startServerIn(t testing.TB, dataDir string, extra ...string) *server {
	t.Helper()
	args, url, dnsPort := serverArgs(t, dataDir, extra...)
	s := &server{
		dnsPort:    dnsPort,
		process:    start(t, args...),
		dataDir:    dataDir,
		url:        url,
		kubeconfig: filepath.Join(dataDir, "admin.kubeconfig"),
	}
	s.waitReady(t)
	// Registered after the process's own cleanup, so it runs first,
	// while the server still answers.
	t.Cleanup(func() {
		if t.Failed() {
			s.logState(t)
		}
	})
	return s
}

// logState logs what a failed test's cluster looked like: its pods,
// events, and the last lines each pod's containers wrote.
func (s *server) logState(t testing.TB) {
	t.Helper()
	logged := func(args ...string) string {
		out, stderr, _ := s.berth(t, args...)
		t.Logf("berth %s:\n%s%s", strings.Join(args, " "), out, stderr)
		return out
	}
	logged("get", "nodes,pods", "-A", "-o", "wide")
	logged("get", "events", "-A")
	out, _, _ := s.berth(t, "get", "pods", "-A", "-o", "jsonpath={range .items[*]}{.metadata.namespace} {.metadata.name}{\"\\n\"}{end}")
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		ns, name, ok := strings.Cut(line, " ")
		if !ok || i == 20 {
			break
		}
		logged("logs", "-n", ns, name, "--all-containers", "--prefix", "--tail", "20")
	}
}

// serverArgs is the command line of `berth server` on free loopback ports
// with dataDir and extra flags, the URL it serves and its DNS port.
func serverArgs(t testing.TB, dataDir string, extra ...string) ([]string, string, int) {
	t.Helper()
	port := freePort(t, "127.0.0.1")
	dnsPort := freePort(t, "127.0.0.1")
	if !hasFlag(extra, "--agent") {
		// Most tests want the control plane alone; those that run pods
		// start agents of their own, or ask for the embedded one.
		extra = append(extra, "--agent=false")
	}
	args := append([]string{"server", "--data-dir", dataDir, "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--dns-listen", fmt.Sprintf("127.0.0.1:%d", dnsPort), "--dns-upstream", "none",
		"--dns-metrics-listen", "127.0.0.1:0", "--dns-health-listen", "127.0.0.1:0"}, extra...)
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	if l := flagValue(extra, "--listen"); l != "" {
		url = "https://" + l // the last --listen wins, as with pflag
	}
	return args, url, dnsPort
}

// waitReady waits until the server has written its kubeconfig and
// answers the CLI.
func (s *server) waitReady(t testing.TB) {
	t.Helper()
	waitFor(t, 30*time.Second, "the server to be ready", func() error {
		select {
		case <-s.done:
			return fmt.Errorf("server exited: %v", s.err)
		default:
		}
		if _, err := os.Stat(s.kubeconfig); err != nil {
			return err
		}
		_, stderr, code := s.berth(t, "get", "namespaces", "-o", "name")
		if code != 0 {
			return errors.New(stderr)
		}
		return nil
	})
}

// hasFlag reports whether args set the flag name (as "name" or "name=…").
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// flagValue is the value the last of args gives the flag name (as
// "name value" or "name=value"), or "".
func flagValue(args []string, name string) string {
	v := ""
	for i, a := range args {
		switch {
		case a == name && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(a, name+"="):
			v = strings.TrimPrefix(a, name+"=")
		}
	}
	return v
}

// berth runs the CLI against the server and returns stdout, stderr and
// the exit code.
func (s *server) berth(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	return run(t, append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
}

func run(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := exitCode(cmd.Run())
	if code < 0 {
		t.Fatalf("berth %s: did not run to an exit (stderr %q)", strings.Join(args, " "), stderr.String())
	}
	return stdout.String(), stderr.String(), code
}

// mustBerth runs the CLI and fails the test unless it exits 0.
// kubectl runs the real kubectl against the server, from this package's
// directory (so that -f testdata/… names the files here whatever else
// runs), and fails the test if it fails.
func (s *server) kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := s.kubectlErr(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// command is tool ("berth" or "kubectl") run against the server with
// args from this package's directory, not yet started, and killed if it
// is still running two minutes on, or when the test ends.
func (s *server) command(t testing.TB, tool string, args ...string) *exec.Cmd {
	t.Helper()
	prog := bin
	if tool == "kubectl" {
		prog = testtool.Need(t, "kubectl")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, prog, append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
	cmd.Dir = packageDir
	return cmd
}

// exitCode is the exit status a command's error reports: 0 for none, -1
// for a command that did not run to an exit.
func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	return -1
}

// kubectlErr runs the real kubectl and returns its output and error.
func (s *server) kubectlErr(t testing.TB, args ...string) (string, error) {
	t.Helper()
	out, err := s.command(t, "kubectl", args...).CombinedOutput()
	return string(out), err
}

func (s *server) mustBerth(t testing.TB, args ...string) string {
	t.Helper()
	stdout, stderr, code := s.berth(t, args...)
	if code != 0 {
		t.Fatalf("berth %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// getJSON runs `berth get ... -o json` and decodes the result.
func (s *server) getJSON(t testing.TB, args ...string) (map[string]any, error) {
	t.Helper()
	stdout, stderr, code := s.berth(t, append(append([]string{"get"}, args...), "-o", "json")...)
	if code != 0 {
		return nil, fmt.Errorf("get %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		return nil, fmt.Errorf("get %s: %v", strings.Join(args, " "), err)
	}
	return out, nil
}

// waitFor polls cond until it returns nil or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	testtool.WaitFor(t, timeout, what, cond)
}

// field walks a decoded JSON object by a dotted path.
func field(obj map[string]any, path string) any {
	var cur any = obj
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// startForLine starts a command that serves until it is killed (a
// forwarder, a proxy) and returns the first line it prints, which says
// where it serves, and its stderr so far; the command is killed when the
// test ends. The line must come in bounded time: a command that hangs
// must not hang the suite.
func startForLine(t testing.TB, cmd *exec.Cmd) (string, *testtool.Buffer) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testtool.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		lines <- l
	}()
	select {
	case l := <-lines:
		return l, stderr
	case <-time.After(30 * time.Second):
		t.Fatalf("%s said nothing in 30s; stderr %s", strings.Join(cmd.Args, " "), stderr.String())
	}
	return "", stderr
}

// grantView binds Kubernetes' view ClusterRole to a service account in
// its namespace with kubectl, as a cluster needs before the account's
// token reads anything there, and waits until the view role has been
// aggregated and the binding answers.
func (s *server) grantView(t testing.TB, namespace, sa string) {
	t.Helper()
	s.kubectl(t, "create", "rolebinding", sa+"-view", "--clusterrole=view", "--serviceaccount="+namespace+":"+sa, "-n", namespace)
	waitFor(t, 30*time.Second, "the view role to be aggregated", func() error {
		out, _ := s.kubectlErr(t, "auth", "can-i", "list", "pods", "-n", namespace, "--as", "system:serviceaccount:"+namespace+":"+sa)
		if strings.TrimSpace(out) != "yes" {
			return fmt.Errorf("can-i: %q", out)
		}
		return nil
	})
}
