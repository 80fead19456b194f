package testtool

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// RequireEnv is the variable that turns a missing tool from a skip into a
// failure.
const RequireEnv = "BERTH_REQUIRE_TOOLS"

// Need returns the path of the named program. When it is not on PATH the
// test is skipped, or fails if RequireEnv is "1".
func Need(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s is required (%s=1) but not found: %v", name, RequireEnv, err)
	}
	t.Skipf("%s not found; install it to run this test (%v)", name, err)
	return ""
}

// WaitFor polls cond every few milliseconds until it returns nil, and
// fails the test with cond's last error once timeout has passed. Tests
// wait for results this way rather than by sleeping a guessed time.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Run runs run in a goroutine until the test ends: at cleanup it cancels
// run's context, waits for it to return, and fails the test with what's
// error if it returned one.
func Run(t testing.TB, what string, run func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", what, err)
		}
	})
}

// SayUntil writes line to in until out holds want, and fails the test
// once timeout has passed. A session attached to a running process gets
// its output only from the time it attached, which its client cannot
// see: the test says something until it is heard.
func SayUntil(t testing.TB, timeout time.Duration, in io.Writer, line string, out *Buffer, want string) {
	t.Helper()
	WaitFor(t, timeout, fmt.Sprintf("%q in answer to %q", want, line), func() error {
		if strings.Contains(out.String(), want) {
			return nil
		}
		if _, err := io.WriteString(in, line); err != nil {
			return err
		}
		return fmt.Errorf("output so far %q", out.String())
	})
}
