package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +kubebuilder:object:root=true

// Service names a set of pods; berth publishes it in DNS.
type Service struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which pods the service names and on which ports.
	Spec ServiceSpec `json:"spec,omitempty"`
	// Status is empty: berth has no load balancers.
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
	// Type is ClusterIP (the default), whose name resolves to its ready
	// endpoints, or ExternalName, whose name is an alias of externalName.
	Type ServiceType `json:"type,omitempty"`
	// Selector lists the labels of the pods behind the service, every one
	// with the same value. Without one, berth keeps no Endpoints for the
	// service: they are written by hand.
	// +mapType=atomic
	Selector map[string]string `json:"selector,omitempty"`
	// Ports are the service's ports; a ClusterIP service needs at least one
	// unless it is headless, and each needs a name when there are several.
	// +listType=map
	// +listMapKey=port
	// +listMapKey=protocol
	Ports []ServicePort `json:"ports,omitempty"`
	// ClusterIP is empty or None: berth has no virtual IPs, so either way
	// the name resolves to the endpoints, as for a headless service. An
	// update that leaves it out keeps it.
	ClusterIP string `json:"clusterIP,omitempty"`
	// ClusterIPs is empty or [None], as clusterIP.
	ClusterIPs []string `json:"clusterIPs,omitempty"`
	// ExternalName is the host name an ExternalName service is a DNS alias
	// (CNAME) of.
	ExternalName string `json:"externalName,omitempty"`
	// PublishNotReadyAddresses counts every pod the service selects as
	// ready, in its Endpoints and in DNS, terminating ones too.
	PublishNotReadyAddresses bool `json:"publishNotReadyAddresses,omitempty"`
}

// ServicePort is one port of a service.
type ServicePort struct {
	// Name names the port, a DNS label, unique in the service; DNS answers
	// SRV queries for _<name>._<protocol>.<service>.
	Name string `json:"name,omitempty"`
	// Protocol is TCP (the default), UDP or SCTP.
	// +default="TCP"
	Protocol Protocol `json:"protocol,omitempty"`
	// AppProtocol is checked and kept, and otherwise unused.
	AppProtocol *string `json:"appProtocol,omitempty"`
	// Port is the service's port number. With no virtual IP nothing listens
	// on it: it names the port and is targetPort's default.
	Port int32 `json:"port"`
	// TargetPort is the port on the pods, a number or the name of a
	// container port; port by default. Endpoints and SRV records carry it
	// resolved.
	TargetPort intstr.IntOrString `json:"targetPort,omitempty"`
}

// ServiceStatus is empty in this version: there are no load balancers.
type ServiceStatus struct{}

// +kubebuilder:object:root=true

// Endpoints lists the addresses behind a service.
type Endpoints struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Subsets group the service's addresses by the ports they serve; for a
	// service with a selector the endpoints controller writes them.
	Subsets []EndpointSubset `json:"subsets,omitempty"`
}

// EndpointSubset is a set of addresses sharing ports.
type EndpointSubset struct {
	// Addresses are the ready endpoints, which DNS answers with.
	Addresses []EndpointAddress `json:"addresses,omitempty"`
	// NotReadyAddresses are the endpoints that are not ready.
	NotReadyAddresses []EndpointAddress `json:"notReadyAddresses,omitempty"`
	// Ports are the ports every address of the subset serves.
	Ports []EndpointPort `json:"ports,omitempty"`
}

// EndpointAddress is one endpoint.
type EndpointAddress struct {
	// IP is the endpoint's IP: its pod's IP, under the exec runtime its
	// node's.
	IP string `json:"ip"`
	// Hostname is the name the endpoint answers to in DNS under the service:
	// its pod's spec.hostname, else the pod's name.
	Hostname string `json:"hostname,omitempty"`
	// NodeName is the node the endpoint's pod runs on.
	NodeName *string `json:"nodeName,omitempty"`
	// TargetRef is the pod behind the endpoint.
	TargetRef *ObjectReference `json:"targetRef,omitempty"`
}

// EndpointPort is a resolved port of an endpoint.
type EndpointPort struct {
	// Name is the service port's name; only named ports have SRV records.
	Name string `json:"name,omitempty"`
	// Port is the port on the endpoint, the service port's targetPort
	// resolved for its pod.
	Port int32 `json:"port"`
	// Protocol is TCP (the default), UDP or SCTP.
	Protocol Protocol `json:"protocol,omitempty"`
}

// ObjectReference points at another object.
type ObjectReference struct {
	// Kind is the kind of the object referred to.
	Kind string `json:"kind,omitempty"`
	// Namespace is its namespace, empty for an object that has none.
	Namespace string `json:"namespace,omitempty"`
	// Name is its name.
	Name string `json:"name,omitempty"`
	// UID pins the reference to one object of that name: a volume's claimRef
	// with a UID binds only that claim.
	UID string `json:"uid,omitempty"`
	// APIVersion is the group and version of its kind.
	APIVersion string `json:"apiVersion,omitempty"`
	// ResourceVersion is the version of the object referred to, where that
	// matters.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// FieldPath names a part of the object, such as one container; usually
	// empty.
	FieldPath string `json:"fieldPath,omitempty"`
}
