package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +kubebuilder:object:root=true

// Service names a set of pods; berth publishes it in DNS.
type Service struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServiceSpec   `json:"spec,omitempty"`
	Status ServiceStatus `json:"status,omitempty"`
}

// ServiceType is how a service is exposed.
type ServiceType string

// Service types.
const (
	ServiceTypeClusterIP    ServiceType = "ClusterIP"
	ServiceTypeExternalName ServiceType = "ExternalName"
)

// ClusterIPNone marks a headless service.
const ClusterIPNone = "None"

// ServiceSpec describes a service.
type ServiceSpec struct {
	Type                     ServiceType       `json:"type,omitempty"`
	Selector                 map[string]string `json:"selector,omitempty"`
	Ports                    []ServicePort     `json:"ports,omitempty"`
	ClusterIP                string            `json:"clusterIP,omitempty"`
	ClusterIPs               []string          `json:"clusterIPs,omitempty"`
	ExternalName             string            `json:"externalName,omitempty"`
	PublishNotReadyAddresses bool              `json:"publishNotReadyAddresses,omitempty"`
}

// ServicePort is one port of a service.
type ServicePort struct {
	Name        string             `json:"name,omitempty"`
	Protocol    Protocol           `json:"protocol,omitempty"`
	AppProtocol *string            `json:"appProtocol,omitempty"`
	Port        int32              `json:"port"`
	TargetPort  intstr.IntOrString `json:"targetPort,omitempty"`
}

// ServiceStatus is empty in this version: there are no load balancers.
type ServiceStatus struct{}

// +kubebuilder:object:root=true

// Endpoints lists the addresses behind a service.
type Endpoints struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Subsets []EndpointSubset `json:"subsets,omitempty"`
}

// EndpointSubset is a set of addresses sharing ports.
type EndpointSubset struct {
	Addresses         []EndpointAddress `json:"addresses,omitempty"`
	NotReadyAddresses []EndpointAddress `json:"notReadyAddresses,omitempty"`
	Ports             []EndpointPort    `json:"ports,omitempty"`
}

// EndpointAddress is one endpoint.
type EndpointAddress struct {
	IP        string           `json:"ip"`
	Hostname  string           `json:"hostname,omitempty"`
	NodeName  *string          `json:"nodeName,omitempty"`
	TargetRef *ObjectReference `json:"targetRef,omitempty"`
}

// EndpointPort is a resolved port of an endpoint.
type EndpointPort struct {
	Name     string   `json:"name,omitempty"`
	Port     int32    `json:"port"`
	Protocol Protocol `json:"protocol,omitempty"`
}

// ObjectReference points at another object.
type ObjectReference struct {
	Kind            string `json:"kind,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	FieldPath       string `json:"fieldPath,omitempty"`
}
