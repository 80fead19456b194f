package eviction

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
)

// Eviction signals, named as the kubelet names them.
const (
	SignalMemoryAvailable = "memory.available"
	SignalNodeFSAvailable = "nodefs.available"
)

// DefaultHard is the --eviction-hard default (SPEC §7), the
// kubelet's own defaults for the two signals berth watches.
const DefaultHard = "memory.available<100Mi,nodefs.available<10%"

// DefaultPeriod is how often eviction checks the signals, and the
// least time between two evictions.
const DefaultPeriod = 10 * time.Second

// Eviction condition reasons, as the node lifecycle controller and
// `berth describe node` read them.
const (
	ReasonSufficientMemory   = "AgentHasSufficientMemory"
	ReasonInsufficientMemory = "AgentHasInsufficientMemory"
	ReasonNoDiskPressure     = "AgentHasNoDiskPressure"
	ReasonDiskPressure       = "AgentHasDiskPressure"
	ReasonSufficientPID      = "AgentHasSufficientPID"
	// ReasonEvicted is the reason of an evicted pod's status and event.
	ReasonEvicted = "Evicted"
)

// Threshold is one hard eviction threshold: the node is under pressure
// when Signal falls below Quantity, or below Percentage (a fraction, 0.1
// for "10%") of the capacity.
type Threshold struct {
	Signal     string
	Quantity   *resource.Quantity
	Percentage float64
}

// Bytes is the threshold in bytes for a resource of the given capacity.
func (t Threshold) Bytes(capacity int64) int64 {
	if t.Quantity != nil {
		return t.Quantity.Value()
	}
	return int64(math.Ceil(t.Percentage * float64(capacity)))
}

// String writes the threshold as --eviction-hard takes it.
func (t Threshold) String() string {
	if t.Quantity != nil {
		return t.Signal + "<" + t.Quantity.String()
	}
	return t.Signal + "<" + strconv.FormatFloat(t.Percentage*100, 'f', -1, 64) + "%"
}

// ParseThresholds reads an --eviction-hard value, as
// "memory.available<100Mi,nodefs.available<10%". Errors name the item.
func ParseThresholds(s string) ([]Threshold, error) {
	var out []Threshold
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		signal, value, ok := strings.Cut(item, "<")
		if !ok {
			return nil, fmt.Errorf("eviction threshold %q: want signal<quantity or signal<percent%%", item)
		}
		signal = strings.TrimSpace(signal)
		value = strings.TrimSpace(value)
		if signal != SignalMemoryAvailable && signal != SignalNodeFSAvailable {
			return nil, fmt.Errorf("eviction threshold %q: unknown signal %q (want %s or %s)", item, signal, SignalMemoryAvailable, SignalNodeFSAvailable)
		}
		if slices.ContainsFunc(out, func(t Threshold) bool { return t.Signal == signal }) {
			return nil, fmt.Errorf("eviction threshold %q: %s given twice", item, signal)
		}
		t := Threshold{Signal: signal}
		if p, isPct := strings.CutSuffix(value, "%"); isPct {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || f < 0 || f > 100 || math.IsNaN(f) {
				return nil, fmt.Errorf("eviction threshold %q: %q is not a percentage from 0 to 100", item, value)
			}
			t.Percentage = f / 100
		} else {
			q, err := resource.ParseQuantity(value)
			if err != nil {
				return nil, fmt.Errorf("eviction threshold %q: %w", item, err)
			}
			if q.Sign() < 0 {
				return nil, fmt.Errorf("eviction threshold %q: must not be negative", item)
			}
			t.Quantity = &q
		}
		out = append(out, t)
	}
	return out, nil
}

// Signals are what eviction compares with the thresholds, in bytes.
type Signals struct {
	MemoryAvailable, MemoryCapacity int64
	NodeFSAvailable, NodeFSCapacity int64
}

// qosClassOf is the pod's QoS class as reported, else as api.PodQOSClass
// computes it (the class oom_score_adj uses).
func qosClassOf(p *api.Pod) api.QOSClass {
	if p.Status.QOSClass != "" {
		return p.Status.QOSClass
	}
	return api.PodQOSClass(p)
}

// memoryRequestOf is the pod's memory request: the sum over its containers,
// or the largest init container's when that is more.
func memoryRequestOf(p *api.Pod) int64 {
	var sum, initMax int64
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[api.ResourceMemory]; ok {
			sum += q.Value()
		}
	}
	for _, c := range p.Spec.InitContainers {
		if q, ok := c.Resources.Requests[api.ResourceMemory]; ok {
			initMax = max(initMax, q.Value())
		}
	}
	return max(sum, initMax)
}

// qosRank orders the classes for eviction: lower goes first.
func qosRank(c api.QOSClass) int {
	switch c {
	case api.QOSBestEffort:
		return 0
	case api.QOSGuaranteed:
		return 2
	}
	return 1
}

// RankForEviction orders the pods eviction may take, first victim first:
// BestEffort pods, then Burstable pods by how much memory they use above
// their requests (most first), then Guaranteed pods; ties go to the pod
// using more, then by namespace and name. Static pods are left out: the
// node needs them, as the kubelet treats them as critical.
func RankForEviction(pods []PodUsage) []PodUsage {
	out := make([]PodUsage, 0, len(pods))
	for _, p := range pods {
		if !p.Static && p.Pod != nil {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b PodUsage) int {
		qa, qb := qosClassOf(a.Pod), qosClassOf(b.Pod)
		if c := cmp.Compare(qosRank(qa), qosRank(qb)); c != 0 {
			return c
		}
		if qa == api.QOSBurstable {
			above := func(p PodUsage) int64 { return p.MemoryBytes - memoryRequestOf(p.Pod) }
			if c := cmp.Compare(above(b), above(a)); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(b.MemoryBytes, a.MemoryBytes); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Pod.Namespace, b.Pod.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.Pod.Name, b.Pod.Name)
	})
	return out
}

// Options are what an Manager needs.
type Options struct {
	// Thresholds are the hard eviction thresholds (ParseThresholds).
	Thresholds []Threshold
	// Signals reads the signals: ReadSignals in production.
	Signals func() (Signals, error)
	// Pods lists the running pods and their usage.
	Pods func(ctx context.Context) []PodUsage
	// Storage measures the local ephemeral storage of the running pods
	// (pods.Manager.Storage); nil checks no pod's storage limits.
	Storage func(ctx context.Context) []PodStorage
	// Evict stops a pod and marks it Failed with reason Evicted and the
	// message.
	Evict func(ctx context.Context, pod *api.Pod, message string) error
	// SetCondition reports MemoryPressure and DiskPressure on the Node
	// (the agent's NodeManager.SetCondition); nil reports nothing.
	SetCondition func(t api.NodeConditionType, status bool, reason, message string)
	// Period is how often the signals and the pods' storage are checked;
	// at most one pod is evicted per period for the node's pressure. 0 is
	// DefaultPeriod.
	Period time.Duration
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Manager watches the node's memory and disk and, under pressure,
// reports it on the Node (so that the scheduler avoids the node) and
// evicts pods one at a time, so that the node survives a pod that grows
// without bound. It evicts a pod over one of its ephemeral-storage limits
// (StorageLimitExceeded) first, as the kubelet does, and then no other pod
// in that period.
type Manager struct {
	o    Options
	last map[api.NodeConditionType]bool
}

// New returns an Manager; Run starts it.
func New(o Options) *Manager {
	if o.Period <= 0 {
		o.Period = DefaultPeriod
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{o: o, last: map[api.NodeConditionType]bool{}}
}

// Run checks at once, then every period, until ctx is done.
func (e *Manager) Run(ctx context.Context) error {
	t := e.o.Clock.NewTicker(e.o.Period)
	defer t.Stop()
	for {
		if err := e.check(ctx); err != nil {
			e.o.Logger.Warn("eviction check", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// pressure is one threshold crossed.
type pressure struct {
	resource  string // "memory" or "ephemeral-storage"
	limit     int64
	available int64
}

// check compares the signals with the thresholds, reports the conditions
// and evicts at most one pod.
func (e *Manager) check(ctx context.Context) error {
	s, err := e.o.Signals()
	if err != nil {
		return fmt.Errorf("read signals: %w", err)
	}
	var crossed []pressure
	under := map[api.NodeConditionType]bool{}
	for _, t := range e.o.Thresholds {
		var p pressure
		var cond api.NodeConditionType
		switch t.Signal {
		case SignalMemoryAvailable:
			p, cond = pressure{"memory", t.Bytes(s.MemoryCapacity), s.MemoryAvailable}, api.NodeMemoryPressure
		case SignalNodeFSAvailable:
			p, cond = pressure{"ephemeral-storage", t.Bytes(s.NodeFSCapacity), s.NodeFSAvailable}, api.NodeDiskPressure
		default:
			continue
		}
		if p.available < p.limit {
			under[cond] = true
			crossed = append(crossed, p)
		}
	}
	e.report(api.NodeMemoryPressure, under[api.NodeMemoryPressure], ReasonInsufficientMemory, "berth agent has insufficient memory available", ReasonSufficientMemory, "berth agent has sufficient memory available")
	e.report(api.NodeDiskPressure, under[api.NodeDiskPressure], ReasonDiskPressure, "berth agent has disk pressure", ReasonNoDiskPressure, "berth agent has no disk pressure")
	if evicted, err := e.evictOverLimits(ctx); evicted || err != nil {
		return err
	}
	if len(crossed) == 0 {
		return nil
	}
	ranked := RankForEviction(e.o.Pods(ctx))
	if len(ranked) == 0 {
		e.o.Logger.Warn("under pressure, no pod to evict", "resource", crossed[0].resource, "available", crossed[0].available)
		return nil
	}
	victim := ranked[0]
	msg := Message(crossed[0].resource, crossed[0].limit, crossed[0].available, victim)
	e.o.Logger.Info("evicting pod", "pod", victim.Pod.Namespace+"/"+victim.Pod.Name, "message", msg)
	if err := e.o.Evict(ctx, victim.Pod, msg); err != nil {
		return fmt.Errorf("evict pod %s/%s: %w", victim.Pod.Namespace, victim.Pod.Name, err)
	}
	return nil
}

// evictOverLimits evicts every pod over one of its local-storage limits,
// static pods aside, and says whether it evicted any.
func (e *Manager) evictOverLimits(ctx context.Context) (bool, error) {
	if e.o.Storage == nil {
		return false, nil
	}
	var evicted bool
	var errs []error
	for _, s := range e.o.Storage(ctx) {
		msg := StorageLimitExceeded(s)
		if msg == "" || s.Static {
			continue
		}
		e.o.Logger.Info("evicting pod", "pod", s.Pod.Namespace+"/"+s.Pod.Name, "message", msg)
		if err := e.o.Evict(ctx, s.Pod, msg); err != nil {
			errs = append(errs, fmt.Errorf("evict pod %s/%s: %w", s.Pod.Namespace, s.Pod.Name, err))
			continue
		}
		evicted = true
	}
	return evicted, errors.Join(errs...)
}

// report sets a pressure condition when it changes.
func (e *Manager) report(t api.NodeConditionType, under bool, onReason, onMsg, offReason, offMsg string) {
	if was, ok := e.last[t]; ok && was == under {
		return
	}
	e.last[t] = under
	if e.o.SetCondition == nil {
		return
	}
	if under {
		e.o.SetCondition(t, true, onReason, onMsg)
	} else {
		e.o.SetCondition(t, false, offReason, offMsg)
	}
}

// Message is the evicted pod's status message, worded as the
// kubelet's: "The node was low on resource: memory. Threshold quantity:
// 100Mi, available: 80Mi. Container app was using 500Mi, request is 100Mi."
func Message(res string, limit, available int64, victim PodUsage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The node was low on resource: %s. Threshold quantity: %s, available: %s.", res, bytesString(limit), bytesString(available))
	if res != "memory" {
		return b.String()
	}
	names := make([]string, 0, len(victim.Pod.Spec.Containers))
	for _, c := range victim.Pod.Spec.Containers {
		names = append(names, c.Name)
	}
	using, request := bytesString(victim.MemoryBytes), bytesString(memoryRequestOf(victim.Pod))
	switch len(names) {
	case 0:
	case 1:
		fmt.Fprintf(&b, " Container %s was using %s, request is %s.", names[0], using, request)
	default:
		fmt.Fprintf(&b, " Containers %s were using %s, request is %s.", strings.Join(names, ", "), using, request)
	}
	return b.String()
}

// bytesString writes a byte count as a quantity, rounded down to Ki when
// it is not a whole number of Ki, so that messages stay readable.
func bytesString(n int64) string {
	if n >= 1024 && n%1024 != 0 {
		n -= n % 1024
	}
	return resource.NewQuantity(n, resource.BinarySI).String()
}
