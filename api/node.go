package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// Node is a machine that runs pods, registered by its agent.
type Node struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeSpec   `json:"spec,omitempty"`
	Status NodeStatus `json:"status,omitempty"`
}

// NodeSpec holds what an operator sets on a node.
type NodeSpec struct {
	Unschedulable bool    `json:"unschedulable,omitempty"`
	Taints        []Taint `json:"taints,omitempty"`
	PodCIDR       string  `json:"podCIDR,omitempty"`
	ProviderID    string  `json:"providerID,omitempty"`
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
	TaintNodeUnreachable   = "node.kubernetes.io/unreachable"
	TaintNodeNotReady      = "node.kubernetes.io/not-ready"
	TaintNodeUnschedulable = "node.kubernetes.io/unschedulable"
)

// Taint repels pods that do not tolerate it.
type Taint struct {
	Key       string       `json:"key"`
	Value     string       `json:"value,omitempty"`
	Effect    TaintEffect  `json:"effect"`
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
	Type               NodeConditionType `json:"type"`
	Status             ConditionStatus   `json:"status"`
	LastHeartbeatTime  metav1.Time       `json:"lastHeartbeatTime,omitempty"`
	LastTransitionTime metav1.Time       `json:"lastTransitionTime,omitempty"`
	Reason             string            `json:"reason,omitempty"`
	Message            string            `json:"message,omitempty"`
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
	Type    NodeAddressType `json:"type"`
	Address string          `json:"address"`
}

// DaemonEndpoint is a port the agent serves on.
type DaemonEndpoint struct {
	Port int32 `json:"Port"`
}

// NodeDaemonEndpoints lists the agent's ports.
type NodeDaemonEndpoints struct {
	KubeletEndpoint DaemonEndpoint `json:"kubeletEndpoint,omitempty"`
}

// NodeSystemInfo describes the machine and agent.
type NodeSystemInfo struct {
	MachineID               string `json:"machineID"`
	BootID                  string `json:"bootID"`
	KernelVersion           string `json:"kernelVersion"`
	OSImage                 string `json:"osImage"`
	ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
	KubeletVersion          string `json:"kubeletVersion"`
	OperatingSystem         string `json:"operatingSystem"`
	Architecture            string `json:"architecture"`
}

// NodeStatus is what the agent and the node controller report.
type NodeStatus struct {
	Capacity        ResourceList        `json:"capacity,omitempty"`
	Allocatable     ResourceList        `json:"allocatable,omitempty"`
	Conditions      []NodeCondition     `json:"conditions,omitempty"`
	Addresses       []NodeAddress       `json:"addresses,omitempty"`
	DaemonEndpoints NodeDaemonEndpoints `json:"daemonEndpoints,omitempty"`
	NodeInfo        NodeSystemInfo      `json:"nodeInfo,omitempty"`
}
