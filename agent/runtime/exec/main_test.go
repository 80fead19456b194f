//go:build linux

package exec

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/runtime"
)

// agentEnv makes the test binary act as an agent that starts one container
// and then waits to be killed: its value is the runtime's root.
const agentEnv = "BERTH_EXEC_TEST_AGENT"

func TestMain(m *testing.M) {
	ShimMain()
	if root := os.Getenv(agentEnv); root != "" {
		os.Exit(fakeAgent(root))
	}
	os.Exit(m.Run())
}

// fakeAgent starts a container that exits 5 on SIGTERM, prints its pid and
// blocks until it is killed.
func fakeAgent(root string) int {
	r, err := New(Options{Root: root})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := r.Start(ctx, &runtime.Container{
		ID:   runtime.ID{PodUID: "killed-agent", Name: "c"},
		Argv: []string{"/bin/sh", "-c", trapScript(5)},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("started %d\n", s.PID)
	select {}
}

// trapScript is a container that says "ready" and exits with code on
// SIGTERM.
func trapScript(code int) string {
	return fmt.Sprintf("trap 'exit %d' TERM; echo ready; while :; do sleep 0.05; done", code)
}
