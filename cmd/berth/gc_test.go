package main

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	t.Setenv("GOGC", "") // restored after the test
	os.Unsetenv("GOGC")
	tuneGC()
	if got := debug.SetGCPercent(100); got != serverGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, serverGCPercent)
	}

	t.Setenv("GOGC", "100")
	tuneGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 set: GC percent %d, want it left at 100", got)
	}
}
