package controlplane

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegistryServesRuntimeAndProcessMetrics(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_test_total", Help: "a test counter"})
	reg, err := newRegistry(c)
	if err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range families {
		have[f.GetName()] = true
	}
	for _, name := range []string{"berth_test_total", "go_goroutines", "go_memstats_heap_inuse_bytes", "go_gc_duration_seconds", "process_resident_memory_bytes", "process_cpu_seconds_total"} {
		if !have[name] {
			t.Errorf("no %s in /metrics", name)
		}
	}
	if _, err := newRegistry(c, c); err == nil {
		t.Error("a collector registered twice: no error")
	}
}
