package node

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// DefaultHeartbeatPeriod is how often the agent renews its node's Lease,
// its heartbeat (SPEC §7).
const DefaultHeartbeatPeriod = 10 * time.Second

// DefaultStatusReportPeriod is how often the agent writes its Node's status
// when nothing in it changed, as the kubelet's
// --node-status-report-frequency: a change is written at once, and the
// Lease alone says the node is alive.
const DefaultStatusReportPeriod = 5 * time.Minute

// ContainerRuntimeVersion is what a node reports as its runtime.
const ContainerRuntimeVersion = "exec://berth"

// Ready condition of a node that heartbeats, read by the node lifecycle
// controller.
const (
	ReasonAgentReady  = "AgentReady"
	MessageAgentReady = "berth agent is posting ready status"
)

// Node annotations the agent writes.
const (
	// AnnotationCgroup says which cgroup version the runtime writes: "v2",
	// "v1", or "none".
	AnnotationCgroup = "berth.dev/cgroup"
	// AnnotationMemoryLimit and AnnotationCPULimit say whether the runtime
	// enforces the limits, "true" or "false", so that an operator knows
	// what a limit means on this node.
	AnnotationMemoryLimit = "berth.dev/memory-limit"
	AnnotationCPULimit    = "berth.dev/cpu-limit"
	// annotationAgentTaints listed the taints an older agent put on, to
	// replace them at its next start; taints are now set only when the
	// Node is created, and the annotation is dropped.
	annotationAgentTaints = "berth.dev/agent-taints"
)

// Options are what a Manager needs.
type Options struct {
	// Client carries the node's own credential (after client.Join).
	Client *client.Client
	Name   string
	IP     string
	// ID is the agent's node ID (see ClaimedError), recorded on the
	// Node; a Node that carries another is not taken over. Empty records
	// and checks none.
	ID string
	// Labels are added to kubernetes.io/hostname, kubernetes.io/os and
	// kubernetes.io/arch.
	Labels map[string]string
	// Taints are the --node-taints.
	Taints []api.Taint
	// Capacity is what the node reports (DetectCapacity merged with
	// --capacity).
	Capacity api.ResourceList
	// Allocatable is what the scheduler may use; nil is
	// Allocatable(Capacity, the eviction.DefaultHard thresholds).
	Allocatable api.ResourceList
	// Port is the agent's HTTPS port, which the API server proxies logs to.
	Port int32
	// Capabilities are reported as node annotations.
	Capabilities runtime.Capabilities
	// Version is the agent's version, reported as nodeInfo.kubeletVersion.
	Version string
	// LocalPathRoot is where local-path volumes of this node live,
	// published on the Node for the provisioner; empty publishes none.
	LocalPathRoot string
	// HeartbeatPeriod is 0 for DefaultHeartbeatPeriod.
	HeartbeatPeriod time.Duration
	// StatusReportPeriod is 0 for DefaultStatusReportPeriod.
	StatusReportPeriod time.Duration
	Clock              clock.WithTicker
	// Logger's lines do not name the node: the agent's logger does.
	Logger *slog.Logger
}

// Manager registers the agent's Node, renews its Lease (the heartbeat
// the node lifecycle controller reads) and keeps its status current: the
// pressure conditions eviction reports, written when they change.
type Manager struct {
	o       Options
	info    api.NodeSystemInfo
	changed chan struct{}

	mu         sync.Mutex
	conditions map[api.NodeConditionType]condition

	// Run's own state, and Register's before Run starts.
	nodeUID types.UID
	beat    Heartbeat
	// done is what register did to the Node ("created node", "took
	// over node"), logged once the status is written too: a line that
	// says the node registered means the agent goes on to watch its pods,
	// even if the status write failed once and was retried.
	done string
}

// condition is what the agent says of one pressure condition.
type condition struct {
	status          bool
	reason, message string
}

// pressureConditions are the conditions besides Ready, in the order they
// are reported, with what they say when all is well.
var pressureConditions = []struct {
	t               api.NodeConditionType
	reason, message string
}{
	{api.NodeMemoryPressure, eviction.ReasonSufficientMemory, "berth agent has sufficient memory available"},
	{api.NodeDiskPressure, eviction.ReasonNoDiskPressure, "berth agent has no disk pressure"},
	{api.NodePIDPressure, eviction.ReasonSufficientPID, "berth agent has sufficient PID available"},
}

// New returns a Manager; Register then Run start it.
func New(o Options) *Manager {
	if o.HeartbeatPeriod <= 0 {
		o.HeartbeatPeriod = DefaultHeartbeatPeriod
	}
	if o.StatusReportPeriod <= 0 {
		o.StatusReportPeriod = DefaultStatusReportPeriod
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Client != nil {
		// Each request gets a period at most, as the kubelet's heartbeat
		// client does: a control plane that takes requests and never
		// answers costs one beat, and the next goes to another one,
		// well before the node's grace period runs out.
		o.Client = o.Client.WithTimeout(o.HeartbeatPeriod)
	}
	if o.Allocatable == nil && o.Capacity != nil {
		t, _ := eviction.ParseThresholds(eviction.DefaultHard)
		o.Allocatable = Allocatable(o.Capacity, t)
	}
	n := &Manager{
		o:          o,
		info:       systemInfo(o.Version, o.Capabilities.Version),
		changed:    make(chan struct{}, 1),
		conditions: map[api.NodeConditionType]condition{},
	}
	for _, c := range pressureConditions {
		n.conditions[c.t] = condition{false, c.reason, c.message}
	}
	n.beat = Heartbeat{
		// A Lease deleted under the agent, or one that names another
		// agent, may have gone with its Node: the status is written first,
		// which registers the Node again if need be, or finds it another
		// agent's.
		Lease:       LeaseRenewer{Client: o.Client, Node: o.Name, ID: o.ID, Owner: func() types.UID { return n.nodeUID }, Lost: n.report},
		WriteStatus: n.readAndWriteStatus,
		Period:      o.HeartbeatPeriod, ReportPeriod: o.StatusReportPeriod, Clock: o.Clock,
	}
	return n
}

// SetCondition sets a pressure condition (MemoryPressure, DiskPressure,
// PIDPressure); a change is written to the Node at once by Run.
func (n *Manager) SetCondition(t api.NodeConditionType, status bool, reason, message string) {
	n.mu.Lock()
	c := condition{status, reason, message}
	old, ok := n.conditions[t]
	n.conditions[t] = c
	n.mu.Unlock()
	if ok && old == c {
		return
	}
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

// Register creates the Node, or takes over an existing one of that name
// that carries no node ID or this agent's: it sets the labels and taints
// the agent owns and keeps the operator's spec.unschedulable, other labels
// and other taints. A Node another agent registered is refused with a
// *ClaimedError. It then writes the status, Ready included, and renews
// the node's Lease. A Lease that cannot be renewed is logged, not an
// error: Run writes the status in its place until it can be. (A Node taken
// by another agent in between is the refusal again.)
func (n *Manager) Register(ctx context.Context) error {
	now := n.o.Clock.Now()
	if err := n.registerNode(ctx); err != nil {
		return err
	}
	err := n.beat.Registered(ctx, now)
	if IsClaimed(err) {
		return err
	}
	if err != nil && ctx.Err() == nil {
		n.o.Logger.Warn("node lease", "err", err)
	}
	return ctx.Err()
}

// registerNode is Register without the Lease.
func (n *Manager) registerNode(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		node, err := n.register(ctx)
		if err == nil {
			n.nodeUID = node.UID
			if err := n.writeStatus(ctx, node); err != nil {
				return err
			}
			if n.done != "" {
				n.o.Logger.Info(n.done)
				n.done = ""
			}
			return nil
		}
		if attempt < 4 && (client.IsConflict(err) || client.IsAlreadyExists(err) || client.IsNotFound(err)) {
			continue
		}
		if IsClaimed(err) {
			return err // it names the node
		}
		return fmt.Errorf("register node %s: %w", n.o.Name, err)
	}
}

// register creates or updates the Node's metadata and spec.
func (n *Manager) register(ctx context.Context) (*api.Node, error) {
	obj, err := n.o.Client.Get(ctx, api.KindOf(&api.Node{}), "", n.o.Name)
	if client.IsNotFound(err) {
		node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: n.o.Name}}
		n.own(node)
		node.Spec.Taints = slices.Clone(n.o.Taints)
		created, err := n.o.Client.Create(ctx, node)
		if err != nil {
			return nil, err
		}
		n.done = "created node"
		return created.(*api.Node), nil
	}
	if err != nil {
		return nil, err
	}
	cur := obj.(*api.Node)
	if err := n.claimed(cur); err != nil {
		return nil, err
	}
	node := cur.DeepCopy()
	n.own(node)
	n.warnTaints(cur)
	if equalMeta(cur, node) {
		return cur, nil
	}
	updated, err := n.o.Client.Update(ctx, node)
	if err != nil {
		return nil, err
	}
	n.done = "took over node"
	return updated.(*api.Node), nil
}

// claimed is a *ClaimedError when node carries another agent's node
// ID, else nil. The update that takes a Node over names the
// resourceVersion it read, so of two agents that read it together, one
// writes and the other reads it again and is refused.
func (n *Manager) claimed(node *api.Node) error {
	id := node.Annotations[AnnotationNodeID]
	if n.o.ID == "" || id == "" || id == n.o.ID {
		return nil
	}
	return &ClaimedError{Node: n.o.Name, ID: id, Own: n.o.ID}
}

// equalMeta reports whether own changed nothing.
func equalMeta(a, b *api.Node) bool {
	return maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		slices.EqualFunc(a.Spec.Taints, b.Spec.Taints, func(x, y api.Taint) bool {
			return x.Key == y.Key && x.Value == y.Value && x.Effect == y.Effect
		})
}

// own sets on node what the agent owns: its labels and its annotations.
// Its taints it sets only when it creates the Node (see register): as
// Kubernetes' NodeRestriction has it, a node may not change its taints
// afterwards, or it could shed the ones that keep workloads away.
func (n *Manager) own(node *api.Node) {
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	maps.Copy(node.Labels, n.o.Labels)
	node.Labels[api.LabelHostname] = n.o.Name
	node.Labels[api.LabelOS] = goruntime.GOOS
	node.Labels[api.LabelArch] = goruntime.GOARCH

	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	caps := n.o.Capabilities
	node.Annotations[AnnotationCgroup] = cmp.Or(caps.Cgroup, "none")
	node.Annotations[AnnotationMemoryLimit] = strconv.FormatBool(caps.MemoryLimit)
	node.Annotations[AnnotationCPULimit] = strconv.FormatBool(caps.CPULimit)
	if n.o.ID != "" {
		node.Annotations[AnnotationNodeID] = n.o.ID
	}
	if n.o.LocalPathRoot != "" {
		node.Annotations[api.AnnotationLocalPathRoot] = n.o.LocalPathRoot
	}
	delete(node.Annotations, annotationAgentTaints)
}

// warnTaints says when the taints the agent was given are not the ones
// the Node it takes over carries: only an operator changes them now.
func (n *Manager) warnTaints(cur *api.Node) {
	for _, t := range n.o.Taints {
		if !slices.ContainsFunc(cur.Spec.Taints, func(h api.Taint) bool {
			return h.Key == t.Key && h.Value == t.Value && h.Effect == t.Effect
		}) {
			n.o.Logger.Warn("--node-taints apply only when the Node is registered: the Node keeps its taints; change them with kubectl taint, or delete the Node to register it again",
				"node", n.o.Name, "missing", t.Key+"="+t.Value+":"+string(t.Effect))
		}
	}
}

// Run renews the node's Lease every HeartbeatPeriod and writes the Node's
// status at once when a condition changes, after a renewal that failed or
// came late (the lifecycle controller may have marked the node Unknown
// meanwhile), and every StatusReportPeriod regardless, as the kubelet
// does, until ctx is done. Register must have succeeded first. A failed
// write is logged and tried again at the next beat; a Node deleted under
// the agent is registered again. A Node that another agent registered
// meanwhile (after it was deleted) ends Run with a *ClaimedError at
// the next heartbeat: the Lease names that agent too.
func (n *Manager) Run(ctx context.Context) error {
	t := n.o.Clock.NewTicker(n.o.HeartbeatPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			if err := n.failed(ctx, "node heartbeat", n.beat.Beat(ctx)); err != nil {
				return err
			}
		case <-n.changed:
			if err := n.failed(ctx, "node status", n.report(ctx)); err != nil {
				return err
			}
		}
	}
}

// failed logs the error of a write Run tries again, and returns the one
// that ends Run: a *ClaimedError.
func (n *Manager) failed(ctx context.Context, what string, err error) error {
	if IsClaimed(err) {
		return err
	}
	if err != nil && ctx.Err() == nil {
		n.o.Logger.Warn(what, "err", err)
	}
	return nil
}

// report writes the Node's status once, registering the Node again if it
// is gone.
func (n *Manager) report(ctx context.Context) error { return n.beat.Report(ctx) }

// readAndWriteStatus writes the Node's status over the one stored,
// registering the Node again if it is gone.
func (n *Manager) readAndWriteStatus(ctx context.Context) error {
	obj, err := n.o.Client.Get(ctx, api.KindOf(&api.Node{}), "", n.o.Name)
	if client.IsNotFound(err) {
		n.o.Logger.Warn("node is gone, registering again")
		return n.registerNode(ctx)
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", n.o.Name, err)
	}
	if err := n.claimed(obj.(*api.Node)); err != nil {
		return err
	}
	return n.writeStatus(ctx, obj.(*api.Node))
}

// writeStatus writes the status over node's, read again on a conflict.
func (n *Manager) writeStatus(ctx context.Context, node *api.Node) error {
	for attempt := 0; ; attempt++ {
		next := node.DeepCopy()
		next.Status = n.status(node.Status.Conditions, n.o.Clock.Now())
		_, err := n.o.Client.UpdateStatus(ctx, next)
		if err == nil {
			n.nodeUID = node.UID
			return nil
		}
		if !client.IsConflict(err) || attempt >= 3 {
			return fmt.Errorf("update status of node %s: %w", n.o.Name, err)
		}
		obj, err := n.o.Client.Get(ctx, api.KindOf(&api.Node{}), "", n.o.Name)
		if err != nil {
			return fmt.Errorf("get node %s: %w", n.o.Name, err)
		}
		node = obj.(*api.Node)
	}
}

// status is the Node status to write at now, given the conditions it has:
// every condition's heartbeat is now; its transition time is kept when
// its status has not changed.
func (n *Manager) status(old []api.NodeCondition, now time.Time) api.NodeStatus {
	ts := metav1.NewTime(now)
	cond := func(t api.NodeConditionType, status bool, reason, message string) api.NodeCondition {
		s := api.ConditionFalse
		if status {
			s = api.ConditionTrue
		}
		c := api.NodeCondition{Type: t, Status: s, LastHeartbeatTime: ts, LastTransitionTime: ts, Reason: reason, Message: message}
		for _, o := range old {
			if o.Type == t && o.Status == s && !o.LastTransitionTime.IsZero() {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		return c
	}
	conditions := []api.NodeCondition{cond(api.NodeReady, true, ReasonAgentReady, MessageAgentReady)}
	n.mu.Lock()
	for _, p := range pressureConditions {
		c := n.conditions[p.t]
		conditions = append(conditions, cond(p.t, c.status, c.reason, c.message))
	}
	n.mu.Unlock()

	var addrs []api.NodeAddress
	if n.o.IP != "" {
		addrs = append(addrs, api.NodeAddress{Type: api.NodeInternalIP, Address: n.o.IP})
	}
	addrs = append(addrs, api.NodeAddress{Type: api.NodeHostName, Address: n.o.Name})
	return api.NodeStatus{
		Capacity:        n.o.Capacity.DeepCopy(),
		Allocatable:     n.o.Allocatable.DeepCopy(),
		Conditions:      conditions,
		Addresses:       addrs,
		DaemonEndpoints: api.NodeDaemonEndpoints{KubeletEndpoint: api.DaemonEndpoint{Port: n.o.Port}},
		NodeInfo:        n.info,
	}
}

// systemInfo reads what the node says of its machine.
func systemInfo(version, runtimeVersion string) api.NodeSystemInfo {
	if runtimeVersion == "" {
		runtimeVersion = ContainerRuntimeVersion
	}
	info := api.NodeSystemInfo{
		MachineID:               readTrimmed("/etc/machine-id"),
		BootID:                  readTrimmed("/proc/sys/kernel/random/boot_id"),
		OSImage:                 osImage(),
		ContainerRuntimeVersion: runtimeVersion,
		KubeletVersion:          api.ServedVersion(version),
		OperatingSystem:         goruntime.GOOS,
		Architecture:            goruntime.GOARCH,
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		info.KernelVersion = unix.ByteSliceToString(u.Release[:])
	}
	return info
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// osImage is PRETTY_NAME of os-release, as the kubelet reports it.
func osImage() string {
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME="); ok {
				if u, err := strconv.Unquote(v); err == nil {
					return u
				}
				return v
			}
		}
	}
	return goruntime.GOOS
}
