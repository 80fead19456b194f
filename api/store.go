package api

// StorePath answers GET with the StoreInfo of the control plane's store,
// to any client with a credential.
const StorePath = "/berth/v1/store"

// StoreInfo identifies a control plane's store: an agent records the UID
// of the store it joined, and stops a running pod that store no longer
// holds only while the UID is the same, so that an emptied or replaced
// store never stops a node's pods.
//
// +kubebuilder:object:generate=false
type StoreInfo struct {
	// UID is the store's identity; empty when the store keeps none.
	UID string `json:"uid"`
}

// PlanPath answers POST with the plan of a revision (see `berth plan`):
// the manifests in the body (YAML or JSON documents), or with
// ?source=NAME and an empty body the Source's repository, at ?ref=REF
// when given. ?timeout= bounds it. Only the admin may plan: a plan reads
// every namespace and every node.
const PlanPath = "/berth/v1/plan"
