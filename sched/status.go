package sched

import "fmt"

// Reasons a filter rejects a node, spelled exactly as kube-scheduler v1.30
// spells them, because users search for these strings and tools parse them
// out of FailedScheduling messages.
const (
	ReasonUnschedulable              = "node(s) were unschedulable"
	ReasonNodeName                   = "node(s) didn't match the requested node name"
	ReasonNodeAffinity               = "node(s) didn't match Pod's node affinity/selector"
	ReasonNodePorts                  = "node(s) didn't have free ports for the requested pod ports"
	ReasonTooManyPods                = "Too many pods"
	ReasonInsufficientCPU            = "Insufficient cpu"
	ReasonInsufficientMemory         = "Insufficient memory"
	ReasonInsufficientEphemeral      = "Insufficient ephemeral-storage"
	ReasonAffinity                   = "node(s) didn't match pod affinity rules"
	ReasonAntiAffinity               = "node(s) didn't match pod anti-affinity rules"
	ReasonExistingAntiAffinity       = "node(s) didn't satisfy existing pods anti-affinity rules"
	ReasonVolumeNodeAffinityConflict = "node(s) had volume node affinity conflict"
	ReasonTopologySpread             = "node(s) didn't match pod topology spread constraints"
	ReasonTopologySpreadLabel        = ReasonTopologySpread + " (missing required label)"

	// reasonUntoleratedTaint is formatted with a taint's key and value.
	reasonUntoleratedTaint = "node(s) had untolerated taint {%s: %s}"
)

// UntoleratedTaintReason is the reason a node is rejected for a taint the
// pod does not tolerate.
func UntoleratedTaintReason(key, value string) string {
	return fmt.Sprintf(reasonUntoleratedTaint, key, value)
}

// Status is why a filter rejected a node; nil means the node passed. A
// Status is never changed after it is made, so filters return shared
// statuses and the hot path allocates nothing.
type Status struct {
	plugin  string
	reasons []string
	// unresolvable: removing pods from the node would not help, as
	// kube-scheduler's UnschedulableAndUnresolvable says, so preemption
	// passes the node over.
	unresolvable bool
}

// newUnresolvable is NewStatus for a reason preemption cannot cure.
func newUnresolvable(plugin string, reasons ...string) *Status {
	return &Status{plugin: plugin, reasons: reasons, unresolvable: true}
}

// NewStatus returns a status of plugin with one or more reasons.
func NewStatus(plugin string, reasons ...string) *Status {
	return &Status{plugin: plugin, reasons: reasons}
}

// Plugin names the filter that rejected the node.
func (s *Status) Plugin() string { return s.plugin }

// Reasons are the user-facing reasons, each counted once per node in a
// FitError.
func (s *Status) Reasons() []string { return s.reasons }

func (s *Status) String() string { return fmt.Sprintf("%s: %v", s.plugin, s.reasons) }
