package agent

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// TestNewDataDirModes: the agent's data dir, its pods/ and volumes/ may
// be passed through by other users but listed by none, whatever mode an
// older agent or the umask left them with, and a pod's directory an older
// agent left open is shut (a gate is kept: pods' TestClosePodDirs).
func TestNewDataDirModes(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dataDir, "pods"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dataDir, "pods", "u-open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{ManifestDir: t.TempDir(), NodeName: "n1", NodeIP: "127.0.0.1", DataDir: dataDir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.rt.Close()
	for _, d := range []string{dataDir, filepath.Join(dataDir, "pods"), filepath.Join(dataDir, "volumes")} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o711 {
			t.Errorf("%s: %v %v, want mode 0711", d, fi, err)
		}
	}
	if fi, err := os.Stat(open); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v %v, want mode 0700", open, fi, err)
	}
}
