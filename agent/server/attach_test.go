package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// attachFixture is a container server in front of container
// default/web/app, run by the exec runtime as the changes make it.
type attachFixture struct{ *logFixture }

func newAttachFixture(t *testing.T, script string, change ...func(*runtime.Container)) attachFixture {
	return attachFixture{serveExecRuntime(t, []string{"/bin/sh", "-c", script}, []string{"PATH=/usr/bin:/bin"}, change...)}
}

// attach attaches as kubectl attach does, until the session ends; the
// error comes on the channel.
func (f attachFixture) attach(t *testing.T, ctx context.Context, opts remotecommand.StreamOptions) <-chan error {
	t.Helper()
	return f.attachOver(t, ctx, overWebSocket, opts)
}

// attachOver is attach over protocol.
func (f attachFixture) attachOver(t *testing.T, ctx context.Context, protocol string, opts remotecommand.StreamOptions) <-chan error {
	t.Helper()
	q := url.Values{}
	for name, on := range map[string]bool{"stdin": opts.Stdin != nil, "stdout": opts.Stdout != nil, "stderr": opts.Stderr != nil, "tty": opts.Tty} {
		if on {
			q.Set(name, "true")
		}
	}
	done := make(chan error, 1)
	go func() { done <- f.streamOver(t, ctx, protocol, api.ContainerAttachPath+"/default/web/app", q, opts) }()
	return done
}

func waitSession(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: the session did not end", what)
	}
}

// TestAttachServer: kubectl's own client attaches to a container's
// process: its input goes in, stdout and stderr come back apart, and the
// end of the client's input ends the session, the container running on.
func TestAttachServer(t *testing.T) {
	f := newAttachFixture(t, `while read line; do echo "out $line"; echo "err $line" >&2; done`, func(c *runtime.Container) { c.Stdin = true })
	inR, inW := io.Pipe()
	var out, errOut testtool.Buffer
	done := f.attach(t, context.Background(), remotecommand.StreamOptions{Stdin: inR, Stdout: &out, Stderr: &errOut})
	testtool.SayUntil(t, 20*time.Second, inW, "one\n", &out, "out one")
	testtool.WaitFor(t, 20*time.Second, "stderr apart", func() error {
		if !strings.Contains(errOut.String(), "err one") || strings.Contains(out.String(), "err") {
			return fmt.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
		}
		return nil
	})
	inW.Close()
	waitSession(t, done, "the end of input")

	// The container still reads: a second session is heard.
	inR, inW = io.Pipe()
	defer inW.Close()
	var again testtool.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done = f.attach(t, ctx, remotecommand.StreamOptions{Stdin: inR, Stdout: &again})
	testtool.SayUntil(t, 20*time.Second, inW, "two\n", &again, "out two")
	cancel()
	<-done
}

// TestAttachServerStdinOnce: what kubectl run -i does, over a WebSocket
// and over SPDY: the input sent, its end closes the container's, and the
// session carries the output until the process ends.
func TestAttachServerStdinOnce(t *testing.T) {
	for _, protocol := range []string{overWebSocket, overSPDY} {
		t.Run(protocol, func(t *testing.T) {
			f := newAttachFixture(t, `read x; echo "got $x"; cat; echo bye >&2`, func(c *runtime.Container) { c.Stdin, c.StdinOnce = true, true })
			var out, errOut testtool.Buffer
			done := f.attachOver(t, context.Background(), protocol, remotecommand.StreamOptions{Stdin: strings.NewReader("hi\nmore\n"), Stdout: &out, Stderr: &errOut})
			waitSession(t, done, "attach with stdinOnce")
			if out.String() != "got hi\nmore\n" || errOut.String() != "bye\n" {
				t.Errorf("stdout %q, stderr %q, want all the process wrote until it ended", out.String(), errOut.String())
			}
		})
	}
}

// sizes is a remotecommand.TerminalSizeQueue of the sizes sent on it.
type sizes chan remotecommand.TerminalSize

func (s sizes) Next() *remotecommand.TerminalSize {
	sz, ok := <-s
	if !ok {
		return nil
	}
	return &sz
}

// TestAttachServerTerminal: attached to a container on a terminal, over
// a WebSocket and over SPDY, the client sizes it and gets its one output.
func TestAttachServerTerminal(t *testing.T) {
	for _, protocol := range []string{overWebSocket, overSPDY} {
		t.Run(protocol, func(t *testing.T) { testAttachServerTerminal(t, protocol) })
	}
}

func testAttachServerTerminal(t *testing.T, protocol string) {
	f := newAttachFixture(t, `while read line; do stty size; [ -t 0 ] && echo "tty $line"; echo "to-stderr" >&2; done`,
		func(c *runtime.Container) { c.Stdin, c.TTY = true, true })
	sz := make(sizes, 1)
	sz <- remotecommand.TerminalSize{Width: 100, Height: 40}
	defer close(sz)
	inR, inW := io.Pipe()
	defer inW.Close()
	var out testtool.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := f.attachOver(t, ctx, protocol, remotecommand.StreamOptions{Stdin: inR, Stdout: &out, Tty: true, TerminalSizeQueue: sz})
	testtool.SayUntil(t, 20*time.Second, inW, "go\n", &out, "40 100")
	// The rest of the loop that printed the size comes after it.
	testtool.WaitFor(t, 20*time.Second, "the terminal's one output", func() error {
		after := out.String()[strings.Index(out.String(), "40 100"):]
		for _, want := range []string{"tty go", "to-stderr"} {
			if !strings.Contains(after, want) {
				return fmt.Errorf("terminal output %q lacks %q", out.String(), want)
			}
		}
		return nil
	})
	cancel()
	<-done
}

// TestAttachServerOutput: attached without input, as kubectl attach is
// without -i, the client gets what the process writes, until it ends.
func TestAttachServerOutput(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	f := newAttachFixture(t, fmt.Sprintf(`while [ ! -e %s ]; do echo tick; sleep 0.02; done; echo done`, gate))
	var out testtool.Buffer
	done := f.attach(t, context.Background(), remotecommand.StreamOptions{Stdout: &out, Stderr: io.Discard})
	testtool.WaitFor(t, 20*time.Second, "the process's output", func() error {
		if !strings.Contains(out.String(), "tick") {
			return fmt.Errorf("output %q", out.String())
		}
		return nil
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitSession(t, done, "output only")
	if !strings.HasSuffix(out.String(), "done\n") {
		t.Errorf("output %q", out.String())
	}
}

// TestAttachServerRefuses: a plain request, a bad query, an unknown
// container and a container that has ended are refused before any
// upgrade.
func TestAttachServerRefuses(t *testing.T) {
	f := newAttachFixture(t, "exit 0")
	c := f.client(t, api.APIServerClientName)
	base := f.srv.URL + api.ContainerAttachPath
	for _, tc := range []struct {
		url  string
		code int
		want string
	}{
		{base + "/default/web/app?stdout=true", http.StatusBadRequest, "attach takes a WebSocket upgrade"},
		{base + "/default/web/app", http.StatusBadRequest, "at least 1 of stdin, stdout, stderr"},
		{base + "/default/web/app?stdout=true&command=sh", http.StatusBadRequest, "attach option command is not supported"},
	} {
		code, body := logServerGet(t, c, tc.url)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s = %d %q, want %d with %q", tc.url, code, body, tc.code, tc.want)
		}
	}
	for ctr, want := range map[string]string{"nope": "container nope is not valid for pod default/web", "app": "container app of pod default/web is not running"} {
		testtool.WaitFor(t, 20*time.Second, "the refusal of "+ctr, func() error {
			code, body := upgradeGet(t, c, base+"/default/web/"+ctr+"?stdout=true")
			if code != http.StatusBadRequest || !strings.Contains(body, want) {
				return fmt.Errorf("%d %s", code, body)
			}
			return nil
		})
	}
	if code, _ := logServerGet(t, f.client(t, "system:node:n2"), base+"/default/web/app?stdout=true"); code != http.StatusForbidden {
		t.Errorf("another node's certificate: %d, want 403", code)
	}
}
