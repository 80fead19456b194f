package agent

import (
	"context"
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/api"
)

// DefaultMetricsPeriod is how often the agent samples what the node and
// its containers use: the window of the CPU rates kubectl top shows, as
// the kubelet's resource metrics are scraped every 10 to 15 seconds.
const DefaultMetricsPeriod = 10 * time.Second

// NodeUsage reads what the whole node has used: its CPU time since boot
// and its memory working set.
type NodeUsage func() (cpuNanos, memoryBytes int64, err error)

// MetricsSampler samples the node and its running containers every Period
// and keeps what they used between the last two samples. A container seen
// once has no rate yet and is left out until the next sample, as
// metrics-server leaves it out.
type MetricsSampler struct {
	Pods   func(ctx context.Context) []eviction.PodUsage
	Node   NodeUsage
	Period time.Duration
	Clock  clock.WithTicker

	mu     sync.Mutex
	prev   *metricsSample
	latest *api.ResourceMetrics
}

// metricsSample is one sample: the cumulative CPU times and the working
// sets.
type metricsSample struct {
	at            time.Time
	nodeCPU       int64
	nodeMemory    int64
	nodeOK        bool
	containerCPUs map[string]int64 // by run
}

// Run samples until ctx ends.
func (m *MetricsSampler) Run(ctx context.Context) error {
	if m.Period <= 0 {
		m.Period = DefaultMetricsPeriod
	}
	if m.Clock == nil {
		m.Clock = clock.RealClock{}
	}
	t := m.Clock.NewTicker(m.Period)
	defer t.Stop()
	for {
		m.Sample(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Sample takes a sample now and, from the one before it, the usage over
// the window between them.
func (m *MetricsSampler) Sample(ctx context.Context) {
	pods := m.Pods(ctx)
	cur := &metricsSample{at: m.Clock.Now(), containerCPUs: map[string]int64{}}
	if m.Node != nil {
		var err error
		cur.nodeCPU, cur.nodeMemory, err = m.Node()
		cur.nodeOK = err == nil
	}
	for _, p := range pods {
		for _, c := range p.Containers {
			cur.containerCPUs[c.Run] = c.CPUNanos
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := m.prev
	m.prev = cur
	if prev == nil {
		return
	}
	window := cur.at.Sub(prev.at)
	if window <= 0 {
		return
	}
	// CPU time over the window, in nanocores: in floating point, as a
	// node's CPU time over ten seconds times 10⁹ overflows an int64.
	rate := func(now, before int64) int64 {
		return max(0, int64(float64(now-before)/window.Seconds()))
	}
	out := &api.ResourceMetrics{Timestamp: cur.at, Window: window}
	if cur.nodeOK && prev.nodeOK {
		out.Node = api.ResourceUsage{NanoCores: rate(cur.nodeCPU, prev.nodeCPU), MemoryBytes: cur.nodeMemory}
	}
	for _, p := range pods {
		pm := api.PodMetrics{Namespace: p.Pod.Namespace, Name: p.Pod.Name}
		for _, c := range p.Containers {
			before, ok := prev.containerCPUs[c.Run]
			if !ok {
				continue
			}
			pm.Containers = append(pm.Containers, api.ContainerMetrics{Name: c.Name, ResourceUsage: api.ResourceUsage{NanoCores: rate(c.CPUNanos, before), MemoryBytes: c.MemoryBytes}})
		}
		if len(pm.Containers) > 0 {
			sort.Slice(pm.Containers, func(i, j int) bool { return pm.Containers[i].Name < pm.Containers[j].Name })
			out.Pods = append(out.Pods, pm)
		}
	}
	m.latest = out
}

// Latest is the usage over the last window; false before two samples.
func (m *MetricsSampler) Latest() (api.ResourceMetrics, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.latest == nil {
		return api.ResourceMetrics{}, false
	}
	return *m.latest, true
}
