package sched

import (
	"syscall"
	"testing"
	"time"
)

// cpuTimer reports the process's CPU time per op alongside the wall time:
// on a shared machine wall time swings with the neighbours' load, CPU time
// much less.
type cpuTimer struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuTimer { return cpuTimer{start: cpuNow()} }

func (c cpuTimer) report(b *testing.B, ops int) {
	if ops > 0 {
		b.ReportMetric(float64(cpuNow()-c.start)/float64(ops), "cpu-ns/op")
	}
}
