package agent

import (
	"fmt"
	"os"
	"strconv"
)

// AgentOOMScoreAdj is the agent's own oom_score_adj, the kubelet's: under
// memory pressure the kernel kills a pod's process long before the agent
// that would restart it. Shims inherit it, and set their container's own.
const AgentOOMScoreAdj = -999

// oomScoreAdjFile is where a process sets its own score; a variable for
// tests.
var oomScoreAdjFile = "/proc/self/oom_score_adj"

// protectFromOOMKiller lowers the agent's oom_score_adj. Lowering it needs
// CAP_SYS_RESOURCE: an agent run by an ordinary user reports the error and
// runs on.
func protectFromOOMKiller(score int) error {
	if err := os.WriteFile(oomScoreAdjFile, []byte(strconv.Itoa(score)), 0); err != nil {
		return fmt.Errorf("set oom_score_adj %d: %w", score, err)
	}
	return nil
}
