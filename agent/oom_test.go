package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestProtectFromOOMKiller(t *testing.T) {
	f := filepath.Join(t.TempDir(), "oom_score_adj")
	if err := os.WriteFile(f, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := oomScoreAdjFile
	oomScoreAdjFile = f
	t.Cleanup(func() { oomScoreAdjFile = old })
	if err := protectFromOOMKiller(AgentOOMScoreAdj); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(f); strings.TrimSpace(string(got)) != strconv.Itoa(AgentOOMScoreAdj) {
		t.Errorf("oom_score_adj %q", got)
	}
	oomScoreAdjFile = filepath.Join(t.TempDir(), "missing", "oom_score_adj")
	if err := protectFromOOMKiller(AgentOOMScoreAdj); err == nil || !strings.Contains(err.Error(), "-999") {
		t.Errorf("unwritable file: %v", err)
	}
}
