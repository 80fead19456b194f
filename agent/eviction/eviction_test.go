package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

func TestParseThresholds(t *testing.T) {
	tests := []struct {
		in   string
		want []string // Threshold.String of each
		err  string
	}{
		{in: DefaultHard, want: []string{"memory.available<100Mi", "nodefs.available<10%"}},
		{in: "", want: nil},
		{in: " memory.available < 1Gi ", want: []string{"memory.available<1Gi"}},
		{in: "memory.available<5%,nodefs.available<2Gi", want: []string{"memory.available<5%", "nodefs.available<2Gi"}},
		{in: "nodefs.available<12.5%", want: []string{"nodefs.available<12.5%"}},
		{in: "memory.available=100Mi", err: `eviction threshold "memory.available=100Mi": want signal<quantity`},
		{in: "imagefs.available<15%", err: `unknown signal "imagefs.available"`},
		{in: "memory.available<lots", err: `eviction threshold "memory.available<lots"`},
		{in: "memory.available<-1Mi", err: "must not be negative"},
		{in: "nodefs.available<150%", err: `"150%" is not a percentage from 0 to 100`},
		{in: "nodefs.available<x%", err: "is not a percentage"},
		{in: "memory.available<1Mi,memory.available<2Mi", err: "memory.available given twice"},
	}
	for _, tt := range tests {
		got, err := ParseThresholds(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseThresholds(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		var s []string
		for _, th := range got {
			s = append(s, th.String())
		}
		if err != nil || !slices.Equal(s, tt.want) {
			t.Errorf("ParseThresholds(%q) = %v, %v; want %v", tt.in, s, err, tt.want)
		}
	}
}

func TestThresholdBytes(t *testing.T) {
	q := resource.MustParse("100Mi")
	tests := []struct {
		t        Threshold
		capacity int64
		want     int64
	}{
		{Threshold{Signal: SignalMemoryAvailable, Quantity: &q}, 1 << 40, 100 << 20},
		{Threshold{Signal: SignalNodeFSAvailable, Percentage: 0.1}, 1000, 100},
		{Threshold{Signal: SignalNodeFSAvailable, Percentage: 0.1}, 1001, 101},
		{Threshold{Signal: SignalNodeFSAvailable, Percentage: 0}, 1000, 0},
	}
	for _, tt := range tests {
		if got := tt.t.Bytes(tt.capacity); got != tt.want {
			t.Errorf("%s of %d = %d, want %d", tt.t, tt.capacity, got, tt.want)
		}
	}
}

// evictionPod makes a pod whose containers have the given "request/limit"
// memory and cpu, as "100Mi/200Mi" ("" for none, "/x" for a limit only).
func evictionPod(name string, resources ...string) *api.Pod {
	p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	for i, r := range resources {
		c := api.Container{Name: fmt.Sprintf("c%d", i)}
		req, lim, _ := strings.Cut(r, "/")
		if req != "" {
			c.Resources.Requests = api.ResourceList{api.ResourceMemory: resource.MustParse(req), api.ResourceCPU: resource.MustParse("100m")}
		}
		if lim != "" {
			c.Resources.Limits = api.ResourceList{api.ResourceMemory: resource.MustParse(lim), api.ResourceCPU: resource.MustParse("100m")}
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	return p
}

func TestRankForEviction(t *testing.T) {
	mi := int64(1 << 20)
	best := func(name string, used int64) PodUsage {
		return PodUsage{Pod: evictionPod(name, ""), MemoryBytes: used * mi}
	}
	burst := func(name, req string, used int64) PodUsage {
		return PodUsage{Pod: evictionPod(name, req+"/"), MemoryBytes: used * mi}
	}
	guar := func(name string, used int64) PodUsage {
		return PodUsage{Pod: evictionPod(name, "100Mi/100Mi"), MemoryBytes: used * mi}
	}
	static := func(p PodUsage) PodUsage { p.Static = true; return p }
	tests := []struct {
		name string
		pods []PodUsage
		want []string
	}{
		{"empty", nil, []string{}},
		{"by class", []PodUsage{guar("g", 900), burst("b", "100Mi", 500), best("e", 1)}, []string{"e", "b", "g"}},
		{"burstable by usage above requests", []PodUsage{
			burst("small-over", "10Mi", 100), // 90 above
			burst("big-under", "1Gi", 900),   // below its request
			burst("most-over", "100Mi", 400), // 300 above
			burst("zero-request", "0", 50),   // 50 above
		}, []string{"most-over", "small-over", "zero-request", "big-under"}},
		{"best effort by usage", []PodUsage{best("a", 10), best("b", 300), best("c", 20)}, []string{"b", "c", "a"}},
		{"ties by usage then name", []PodUsage{
			burst("z", "100Mi", 200), burst("y", "0", 100), burst("x", "0", 100), guar("g2", 50), guar("g1", 50),
		}, []string{"z", "x", "y", "g1", "g2"}},
		{"static never", []PodUsage{static(best("s", 9999)), guar("g", 1), static(burst("t", "1Mi", 5000))}, []string{"g"}},
		{"reported class wins", []PodUsage{
			func() PodUsage {
				p := best("reported-guaranteed", 500)
				p.Pod.Status.QOSClass = api.QOSGuaranteed
				return p
			}(),
			guar("g", 10),
			best("e", 1),
		}, []string{"e", "reported-guaranteed", "g"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.pods)
			got := []string{}
			for _, p := range RankForEviction(tt.pods) {
				got = append(got, p.Pod.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ranked %v, want %v", got, tt.want)
			}
			if !slices.EqualFunc(in, tt.pods, func(a, b PodUsage) bool { return a.Pod == b.Pod }) {
				t.Error("RankForEviction reordered its input")
			}
		})
	}
}

func TestQOSClassOf(t *testing.T) {
	tests := []struct {
		pod  *api.Pod
		want api.QOSClass
	}{
		{evictionPod("a", ""), api.QOSBestEffort},
		{evictionPod("a", "", ""), api.QOSBestEffort},
		{evictionPod("a", "1Mi/1Mi"), api.QOSGuaranteed},
		{evictionPod("a", "1Mi/1Mi", "2Mi/2Mi"), api.QOSGuaranteed},
		{evictionPod("a", "1Mi/1Mi", ""), api.QOSBurstable},
		{evictionPod("a", "1Mi/2Mi"), api.QOSBurstable},
		{evictionPod("a", "1Mi"), api.QOSBurstable},
	}
	for i, tt := range tests {
		if got := qosClassOf(tt.pod); got != tt.want {
			t.Errorf("%d: qos = %s, want %s", i, got, tt.want)
		}
	}
}

func TestEvictionMessage(t *testing.T) {
	mi := int64(1 << 20)
	p := evictionPod("web", "100Mi/")
	p.Spec.Containers[0].Name = "app"
	got := Message("memory", 100*mi, 80*mi, PodUsage{Pod: p, MemoryBytes: 500 * mi})
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. Container app was using 500Mi, request is 100Mi."
	if got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
	two := evictionPod("two", "", "")
	got = Message("memory", 100*mi, 80*mi+5, PodUsage{Pod: two, MemoryBytes: 3*mi + 1500})
	want = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. Containers c0, c1 were using 3073Ki, request is 0."
	if got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
	got = Message("ephemeral-storage", 10<<30, 1<<30, PodUsage{Pod: p})
	want = "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 1Gi."
	if got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
}

// evictionHarness is an Manager over pods and signals of the
// test's, recording what it evicts and the conditions it sets.
type evictionHarness struct {
	mu         sync.Mutex
	signals    Signals
	signalErr  error
	pods       []PodUsage
	evicted    []string
	messages   []string
	conditions []string
}

func (h *evictionHarness) options(clk *clocktesting.FakeClock, thresholds string) Options {
	th, err := ParseThresholds(thresholds)
	if err != nil {
		panic(err)
	}
	return Options{
		Thresholds: th,
		Signals: func() (Signals, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.signals, h.signalErr
		},
		Pods: func(context.Context) []PodUsage {
			h.mu.Lock()
			defer h.mu.Unlock()
			return slices.Clone(h.pods)
		},
		Evict: func(_ context.Context, pod *api.Pod, message string) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.evicted = append(h.evicted, pod.Name)
			h.messages = append(h.messages, message)
			h.pods = slices.DeleteFunc(h.pods, func(p PodUsage) bool { return p.Pod == pod })
			return nil
		},
		SetCondition: func(t api.NodeConditionType, status bool, reason, _ string) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.conditions = append(h.conditions, fmt.Sprintf("%s=%v/%s", t, status, reason))
		},
		Period: 10 * time.Second,
		Clock:  clk,
	}
}

func (h *evictionHarness) state() (evicted, conditions []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.evicted), slices.Clone(h.conditions)
}

func TestEvictionLoop(t *testing.T) {
	const mi = 1 << 20
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	h := &evictionHarness{
		signals: Signals{MemoryAvailable: 80 * mi, MemoryCapacity: 4096 * mi, NodeFSAvailable: 50, NodeFSCapacity: 100},
		pods: []PodUsage{
			{Pod: evictionPod("guaranteed", "100Mi/100Mi"), MemoryBytes: 90 * mi},
			{Pod: evictionPod("burstable", "100Mi/"), MemoryBytes: 500 * mi},
			{Pod: evictionPod("static", ""), MemoryBytes: 900 * mi, Static: true},
			{Pod: evictionPod("besteffort", ""), MemoryBytes: 10 * mi},
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	e := New(h.options(clk, DefaultHard))
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	want := []string{"besteffort", "burstable", "guaranteed"}
	for i := range want {
		testtool.WaitFor(t, 5*time.Second, fmt.Sprintf("%d evictions", i+1), func() error {
			if ev, _ := h.state(); len(ev) != i+1 {
				return fmt.Errorf("evicted %v", ev)
			}
			return nil
		})
		// One per period: no second eviction before the clock moves.
		testtool.WaitFor(t, 5*time.Second, "the ticker", func() error {
			if !clk.HasWaiters() {
				return errors.New("no ticker")
			}
			return nil
		})
		if ev, _ := h.state(); len(ev) != i+1 {
			t.Fatalf("evicted %v before the period passed", ev)
		}
		clk.Step(10 * time.Second)
	}
	evicted, conditions := h.state()
	if !slices.Equal(evicted[:3], want) {
		t.Errorf("evicted %v, want %v", evicted, want)
	}
	if len(conditions) < 2 || conditions[0] != "MemoryPressure=true/AgentHasInsufficientMemory" || conditions[1] != "DiskPressure=false/AgentHasNoDiskPressure" {
		t.Errorf("conditions %v", conditions)
	}
	h.mu.Lock()
	msg := h.messages[1]
	h.mu.Unlock()
	if !strings.HasPrefix(msg, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. Container c0 was using 500Mi, request is 100Mi.") {
		t.Errorf("message %q", msg)
	}

	// Memory comes back: the pressure goes, the static pod stays.
	h.mu.Lock()
	h.signals.MemoryAvailable = 1024 * mi
	h.mu.Unlock()
	clk.Step(10 * time.Second)
	testtool.WaitFor(t, 5*time.Second, "memory pressure cleared", func() error {
		_, c := h.state()
		if c[len(c)-1] != "MemoryPressure=false/AgentHasSufficientMemory" {
			return fmt.Errorf("conditions %v", c)
		}
		return nil
	})
	if ev, _ := h.state(); len(ev) != 3 {
		t.Errorf("evicted %v, want only the three non-static pods", ev)
	}
}

func TestEvictionDiskPressure(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	h := &evictionHarness{
		signals: Signals{MemoryAvailable: 1 << 30, MemoryCapacity: 1 << 32, NodeFSAvailable: 5 << 30, NodeFSCapacity: 100 << 30},
		pods:    []PodUsage{{Pod: evictionPod("a", ""), MemoryBytes: 1}},
	}
	e := New(h.options(clk, DefaultHard))
	if err := e.check(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev, c := h.state()
	if !slices.Equal(ev, []string{"a"}) || !slices.Equal(c, []string{"MemoryPressure=false/AgentHasSufficientMemory", "DiskPressure=true/AgentHasDiskPressure"}) {
		t.Errorf("evicted %v, conditions %v", ev, c)
	}
	if !strings.HasPrefix(h.messages[0], "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 5Gi.") {
		t.Errorf("message %q", h.messages[0])
	}
	// An unchanged condition is not set again; a failed read changes nothing.
	h.signalErr = errors.New("no /proc")
	if err := e.check(context.Background()); err == nil || !strings.Contains(err.Error(), "no /proc") {
		t.Errorf("check with a failing read: %v", err)
	}
	h.signalErr = nil
	if err := e.check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, c := h.state(); len(c) != 2 {
		t.Errorf("conditions set again: %v", c)
	}
}
