package agent_test

import (
	"os"
	"testing"

	"github.com/berth-dev/berth/agent/runtime/exec"
)

// TestMain lets the test binary act as the exec runtime's shim, which the
// runtime starts as /proc/self/exe: the agents of the tests run their
// static pods' containers under it.
func TestMain(m *testing.M) {
	exec.ShimMain()
	os.Exit(m.Run())
}
