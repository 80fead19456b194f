package main

import (
	"os"
	"runtime/debug"
)

// serverGCPercent is the garbage collector's target (GOGC) of the
// long-running commands when the environment sets none.
//
// Nearly all of a berth server's heap is state it keeps for its whole life:
// every object in the store, its indexes, the sources' decoded manifests.
// At Go's default of 100 the heap may grow to twice that before a
// collection, so the resident size is about twice the state. At 50 it is
// about one and a half times, for somewhat more frequent collections;
// in-memory databases written in Go make the same trade. The performance
// notes of docs/sources.md have the figures. GOGC in the environment (or
// GOMEMLIMIT, for a soft limit) still decides when set.
const serverGCPercent = 50

// tuneGC applies serverGCPercent unless GOGC is set.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(serverGCPercent)
	}
}
