package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// Node is a machine that runs pods, registered by its agent.
type Node struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds what an operator sets on the node: whether it takes new
	// pods, and its taints.
	Spec NodeSpec `json:"spec,omitempty"`
	// Status is what the node's agent reports, and the node controller when
	// the agent goes silent.
	Status NodeStatus `json:"status,omitempty"`
}

// NodeSpec holds what an operator sets on a node.
type NodeSpec struct {
	// Unschedulable cordons the node: the scheduler places no new pods there
	// (except those tolerating node.kubernetes.io/unschedulable) and the
	// local-path provisioner picks other nodes. Running pods stay.
	Unschedulable bool `json:"unschedulable,omitempty"`
	// Taints keep pods that do not tolerate them off the node. The agent
	// sets those of its --node-taints flag, the node controller the
	// not-ready and unreachable ones.
	Taints []Taint `json:"taints,omitempty"`
	// PodCIDR is the range the node's pods take their addresses from: the
	// control plane's node IPAM controller assigns one out of
	// --cluster-cidr when the node registers (or keeps one set here that
	// lies inside that range and no other node holds), the agent's CNI
	// bridge gives pods addresses from it, and every other agent routes
	// it to this node's InternalIP. Pods of the exec runtime share their
	// node's network and use none.
	PodCIDR string `json:"podCIDR,omitempty"`
	// PodCIDRs holds the node's pod ranges, one per IP family; its first
	// is PodCIDR. berth assigns one family, so at most one.
	PodCIDRs []string `json:"podCIDRs,omitempty"`
	// ProviderID is kept and shown, and otherwise unused.
	ProviderID string `json:"providerID,omitempty"`
}

// TaintEffect says what a taint does to pods that do not tolerate it.
type TaintEffect string

// Taint effects.
const (
	TaintEffectNoSchedule       TaintEffect = "NoSchedule"
	TaintEffectPreferNoSchedule TaintEffect = "PreferNoSchedule"
	TaintEffectNoExecute        TaintEffect = "NoExecute"
)

// Well-known taints.
const (
	TaintNodeUnreachable    = "node.kubernetes.io/unreachable"
	TaintNodeNotReady       = "node.kubernetes.io/not-ready"
	TaintNodeUnschedulable  = "node.kubernetes.io/unschedulable"
	TaintNodeMemoryPressure = "node.kubernetes.io/memory-pressure"
	TaintNodeDiskPressure   = "node.kubernetes.io/disk-pressure"
	TaintNodePIDPressure    = "node.kubernetes.io/pid-pressure"
)

// Taint repels pods that do not tolerate it.
type Taint struct {
	// Key is the taint's key, a label name; with effect, unique on the node.
	Key string `json:"key"`
	// Value is the taint's value, which a toleration with operator Equal
	// must match.
	Value string `json:"value,omitempty"`
	// Effect is NoSchedule or NoExecute, which keep pods that do not
	// tolerate the taint off the node, or PreferNoSchedule, which the
	// scheduler only avoids. NoExecute also evicts the pods on the node
	// that do not tolerate it: at once, or for the node controller's own
	// not-ready and unreachable taints after --pod-eviction-timeout.
	Effect TaintEffect `json:"effect"`
	// TimeAdded is when a NoExecute taint was added (the node controller
	// stamps one an operator set when it first sees it); a toleration's
	// tolerationSeconds count from it.
	TimeAdded *metav1.Time `json:"timeAdded,omitempty"`
}

// NodeConditionType names a node condition.
type NodeConditionType string

// Node condition types.
const (
	NodeReady          NodeConditionType = "Ready"
	NodeMemoryPressure NodeConditionType = "MemoryPressure"
	NodeDiskPressure   NodeConditionType = "DiskPressure"
	NodePIDPressure    NodeConditionType = "PIDPressure"
)

// NodeCondition is one condition of a node.
type NodeCondition struct {
	// Type is Ready, MemoryPressure, DiskPressure or PIDPressure.
	Type NodeConditionType `json:"type"`
	// Status is True, False, or Unknown once the node controller has heard
	// nothing from the agent for the grace period.
	Status ConditionStatus `json:"status"`
	// LastHeartbeatTime is when the agent last reported the condition.
	LastHeartbeatTime metav1.Time `json:"lastHeartbeatTime,omitempty"`
	// LastTransitionTime is when status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is why, in one CamelCase word.
	Reason string `json:"reason,omitempty"`
	// Message says why in words.
	Message string `json:"message,omitempty"`
}

// NodeAddressType names the kind of a node address.
type NodeAddressType string

// Node address types.
const (
	NodeHostName   NodeAddressType = "Hostname"
	NodeInternalIP NodeAddressType = "InternalIP"
	NodeExternalIP NodeAddressType = "ExternalIP"
)

// NodeAddress is one address of a node.
type NodeAddress struct {
	// Type is InternalIP (the agent's --node-ip) or Hostname (the node's
	// name).
	Type NodeAddressType `json:"type"`
	// Address is the address.
	Address string `json:"address"`
}

// DaemonEndpoint is a port the agent serves on.
type DaemonEndpoint struct {
	// Port is the port the agent serves HTTPS on.
	Port int32 `json:"Port"`
}

// NodeDaemonEndpoints lists the agent's ports.
type NodeDaemonEndpoints struct {
	// KubeletEndpoint is where the agent serves logs, exec, port-forward and
	// metrics, which the API server reaches at the node's InternalIP.
	KubeletEndpoint DaemonEndpoint `json:"kubeletEndpoint,omitempty"`
}

// NodeSystemInfo describes the machine and agent.
type NodeSystemInfo struct {
	// MachineID is the machine's /etc/machine-id.
	MachineID string `json:"machineID"`
	// BootID is the kernel's boot ID, which changes at each boot.
	BootID string `json:"bootID"`
	// KernelVersion is the kernel's release (uname -r).
	KernelVersion string `json:"kernelVersion"`
	// OSImage is the operating system's PRETTY_NAME from os-release.
	OSImage string `json:"osImage"`
	// ContainerRuntimeVersion names the agent's runtime: exec://berth.
	ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
	// KubeletVersion is the version of the berth agent.
	KubeletVersion string `json:"kubeletVersion"`
	// OperatingSystem is the operating system, as Go names it (linux).
	OperatingSystem string `json:"operatingSystem"`
	// Architecture is the processor architecture, as Go names it (amd64,
	// arm64).
	Architecture string `json:"architecture"`
}

// NodeStatus is what the agent and the node controller report.
type NodeStatus struct {
	// Capacity is what the machine has, read from the host or set by
	// --capacity: cpu, memory, ephemeral-storage (the agent's data
	// directory's file system) and pods (110 by default).
	Capacity ResourceList `json:"capacity,omitempty"`
	// Allocatable is what the scheduler may place there: capacity less a
	// system reserve (100m cpu, 100Mi memory) and less the hard eviction
	// thresholds.
	Allocatable ResourceList `json:"allocatable,omitempty"`
	// Conditions are Ready and the MemoryPressure, DiskPressure and
	// PIDPressure the agent reports; the scheduler avoids a node under
	// pressure.
	// +listType=map
	// +listMapKey=type
	Conditions []NodeCondition `json:"conditions,omitempty"`
	// Addresses are the node's InternalIP and Hostname.
	// +listType=map
	// +listMapKey=type
	Addresses []NodeAddress `json:"addresses,omitempty"`
	// DaemonEndpoints are the ports the agent serves on.
	DaemonEndpoints NodeDaemonEndpoints `json:"daemonEndpoints,omitempty"`
	// NodeInfo describes the machine and the agent.
	NodeInfo NodeSystemInfo `json:"nodeInfo,omitempty"`
}
