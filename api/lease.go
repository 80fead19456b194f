package api

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// NamespaceNodeLease holds one Lease per node, named after it, which its
// agent renews as its heartbeat (SPEC §7), as in Kubernetes.
const NamespaceNodeLease = "kube-node-lease"

// +kubebuilder:object:root=true

// Lease is a coordination.k8s.io/v1 Lease. A node's agent holds the Lease
// of its name in kube-node-lease and renews it every heartbeat period: a
// write of a few hundred bytes, where a heartbeat on the Node itself would
// rewrite its whole status. The node lifecycle controller reads the
// renewals.
type Lease struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says who holds the lease and when it was last renewed.
	Spec LeaseSpec `json:"spec,omitempty"`
}

// LeaseSpec is who holds a lease, for how long, and when it was last
// renewed.
type LeaseSpec struct {
	// HolderIdentity names the holder: for a node's lease, the node.
	HolderIdentity *string `json:"holderIdentity,omitempty"`
	// LeaseDurationSeconds is how long after RenewTime others may take the
	// lease over (for a node: its monitor grace period).
	LeaseDurationSeconds *int32 `json:"leaseDurationSeconds,omitempty"`
	// AcquireTime is when the current holder took the lease.
	AcquireTime *metav1.MicroTime `json:"acquireTime,omitempty"`
	// RenewTime is when the holder last renewed it.
	RenewTime *metav1.MicroTime `json:"renewTime,omitempty"`
	// LeaseTransitions counts the changes of holder.
	LeaseTransitions *int32 `json:"leaseTransitions,omitempty"`
}
