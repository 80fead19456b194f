package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/runtime/exec"
	"github.com/berth-dev/berth/api"
)

// TestMain lets the test binary act as the exec runtime's shim, which the
// runtime starts as /proc/self/exe.
func TestMain(m *testing.M) {
	exec.ShimMain()
	os.Exit(m.Run())
}

// TestLogServerExecRuntime follows the log of a real process run by the
// exec runtime through the log server.
func TestLogServerExecRuntime(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "go")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := fmt.Sprintf("echo one; echo two; while [ ! -e %s ]; do sleep 0.02; done; echo three", gate)
	f := serveExecRuntime(t, []string{"/bin/sh", "-c", script}, nil)
	r := followLog(t, ctx, f, "follow=true&tailLines=1")
	// The process may not have written "two" yet when the request comes:
	// the tail then starts at "one".
	line, err := r.ReadString('\n')
	if err != nil || (line != "two\n" && line != "one\n") {
		t.Fatalf("read %q, %v; want the last line written", line, err)
	}
	if line == "one\n" {
		if line, err = r.ReadString('\n'); err != nil || line != "two\n" {
			t.Fatalf("read %q, %v; want \"two\"", line, err)
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "three\n" {
		t.Errorf("after the gate: %q, %v; want \"three\" and the end", rest, err)
	}
}

// TestLogServerExecRuntimeTimestamps follows a real process's log with
// its lines' times: each line comes with the time its write was read, in
// order, and a line written later comes as it is written.
func TestLogServerExecRuntimeTimestamps(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "go")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	f := serveExecRuntime(t, []string{"/bin/sh", "-c", fmt.Sprintf("echo one; while [ ! -e %s ]; do sleep 0.02; done; echo two", gate)}, nil)
	r := followLog(t, ctx, f, "follow=true&timestamps=true")
	var last time.Time
	for _, want := range []string{"one", "two"} {
		if want == "two" {
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		line, err := r.ReadString('\n')
		stamp, text, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		at, perr := time.Parse(time.RFC3339Nano, stamp)
		if err != nil || !ok || perr != nil || text != want || at.Before(start.Add(-time.Second)) || at.Before(last) {
			t.Fatalf("read %q (%v, %v); want %q after its time", line, err, perr, want)
		}
		last = at
	}
}

// followLog asks the container server for default/web/app's log with
// query, as the API server does, and returns the answer to read.
func followLog(t *testing.T, ctx context.Context, f *logFixture, query string) *bufio.Reader {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+api.ContainerLogsPath+"/default/web/app?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.client(t, api.APIServerClientName).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("follow: %s", resp.Status)
	}
	return bufio.NewReader(resp.Body)
}
