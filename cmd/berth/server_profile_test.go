package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// TestHeapProfileOnSignal: SIGUSR1 writes a heap profile of the running
// process, and none is written before it.
func TestHeapProfileOnSignal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.prof")
	stop := heapProfileOnSignal(path, &globalOptions{logger: slog.New(slog.DiscardHandler)})
	defer stop()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a profile before any signal: %v", err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "a heap profile", func() error {
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		if st.Size() == 0 {
			return fmt.Errorf("empty")
		}
		return nil
	})
}
