package agent

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/api"
)

// TestMetricsSampler: the usage over a window is the CPU time used in it
// over its length, and the working set at its end; a container seen once
// (new, or restarted as a new run) waits for its second sample; nothing
// is known before two samples.
func TestMetricsSampler(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	web := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"}}
	var pods []eviction.PodUsage
	var nodeCPU int64
	m := &MetricsSampler{
		Pods:  func(context.Context) []eviction.PodUsage { return pods },
		Node:  func() (int64, int64, error) { return nodeCPU, 8 << 30, nil },
		Clock: clk,
	}
	ctx := context.Background()
	pods = []eviction.PodUsage{{Pod: web, Containers: []eviction.ContainerUsage{{Name: "app", Run: "u1/app/0", CPUNanos: 1e9, MemoryBytes: 100 << 20}}}}
	nodeCPU = 100e9
	m.Sample(ctx)
	if _, ok := m.Latest(); ok {
		t.Fatal("metrics after one sample")
	}
	clk.Step(10 * time.Second)
	pods = []eviction.PodUsage{{Pod: web, Containers: []eviction.ContainerUsage{
		{Name: "app", Run: "u1/app/0", CPUNanos: 6e9, MemoryBytes: 120 << 20},        // 5 s of CPU in 10 s
		{Name: "sidecar", Run: "u1/sidecar/0", CPUNanos: 1e9, MemoryBytes: 10 << 20}, // new: no rate yet
	}}}
	nodeCPU = 115e9
	m.Sample(ctx)
	got, ok := m.Latest()
	if !ok || got.Window != 10*time.Second || !got.Timestamp.Equal(clk.Now()) {
		t.Fatalf("metrics %+v, %v", got, ok)
	}
	if got.Node != (api.ResourceUsage{NanoCores: 1.5e9, MemoryBytes: 8 << 30}) {
		t.Errorf("node %+v, want 1.5 cores and 8Gi", got.Node)
	}
	if len(got.Pods) != 1 || len(got.Pods[0].Containers) != 1 ||
		got.Pods[0].Containers[0] != (api.ContainerMetrics{Name: "app", ResourceUsage: api.ResourceUsage{NanoCores: 5e8, MemoryBytes: 120 << 20}}) {
		t.Errorf("pods %+v, want app alone at 500m and 120Mi", got.Pods)
	}

	clk.Step(5 * time.Second)
	pods = []eviction.PodUsage{{Pod: web, Containers: []eviction.ContainerUsage{
		{Name: "app", Run: "u1/app/1", CPUNanos: 1e8, MemoryBytes: 50 << 20}, // restarted: a new run
		{Name: "sidecar", Run: "u1/sidecar/0", CPUNanos: 2e9, MemoryBytes: 10 << 20},
	}}}
	m.Sample(ctx)
	got, _ = m.Latest()
	if len(got.Pods) != 1 || len(got.Pods[0].Containers) != 1 || got.Pods[0].Containers[0].Name != "sidecar" || got.Pods[0].Containers[0].NanoCores != 2e8 {
		t.Errorf("after a restart %+v, want the sidecar alone at 200m", got.Pods)
	}
}
