package api

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// TokenRequest asks for a service account's token: the body and answer of
// POST …/serviceaccounts/{name}/token, as authentication.k8s.io/v1 has it.
// It is not stored, so it is not a kind of the registry.
//
// +kubebuilder:object:generate=false
type TokenRequest struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TokenRequestSpec   `json:"spec"`
	Status            TokenRequestStatus `json:"status,omitempty"`
}

// TokenRequestSpec says what the token is for.
//
// +kubebuilder:object:generate=false
type TokenRequestSpec struct {
	Audiences         []string `json:"audiences,omitempty"`
	ExpirationSeconds *int64   `json:"expirationSeconds,omitempty"`
	// BoundObjectRef ties the token to a pod: it is valid only while that
	// pod exists with that UID.
	BoundObjectRef *BoundObjectReference `json:"boundObjectRef,omitempty"`
}

// BoundObjectReference names the object a token is bound to.
//
// +kubebuilder:object:generate=false
type BoundObjectReference struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
}

// TokenRequestStatus carries the token.
//
// +kubebuilder:object:generate=false
type TokenRequestStatus struct {
	Token               string      `json:"token"`
	ExpirationTimestamp metav1.Time `json:"expirationTimestamp"`
}
