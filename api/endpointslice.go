package api

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Labels Kubernetes puts on the EndpointSlices of a service, and by which
// readers (kubectl describe service, proxies, meshes) find them.
const (
	// LabelServiceName names the service a slice belongs to.
	LabelServiceName = "kubernetes.io/service-name"
	// LabelManagedBy names the controller that writes a slice; others
	// leave its slices alone.
	LabelManagedBy = "endpointslice.kubernetes.io/managed-by"
)

// +kubebuilder:object:root=true

// EndpointSlice is a discovery.k8s.io/v1 EndpointSlice: a part of the
// endpoints behind a service, of one address type and one set of ports.
// Kubernetes has moved its readers from Endpoints to EndpointSlices;
// berth keeps both for every service with a selector, from one
// computation, so they never disagree.
type EndpointSlice struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// AddressType is the kind of every address of the slice: IPv4, IPv6
	// or FQDN. It cannot change.
	AddressType AddressType `json:"addressType"`
	// Endpoints are the endpoints of the slice, at most 1000; the
	// controller puts at most 100 in one.
	// +listType=atomic
	Endpoints []Endpoint `json:"endpoints"`
	// Ports are the ports every endpoint of the slice serves, each with a
	// unique name; empty means no ports are defined.
	// +listType=atomic
	Ports []EndpointSlicePort `json:"ports"`
}

// AddressType is the kind of the addresses of an EndpointSlice.
type AddressType string

// Address types.
const (
	AddressTypeIPv4 AddressType = "IPv4"
	AddressTypeIPv6 AddressType = "IPv6"
	AddressTypeFQDN AddressType = "FQDN"
)

// Endpoint is one endpoint of an EndpointSlice: for a service with a
// selector, one pod.
type Endpoint struct {
	// Addresses of the endpoint, of the slice's address type; readers use
	// the first. Kubernetes' controller and berth's write exactly one.
	// +listType=set
	Addresses []string `json:"addresses"`
	// Conditions say whether the endpoint takes traffic.
	Conditions EndpointConditions `json:"conditions,omitempty"`
	// Hostname is the name the endpoint answers to in DNS under its
	// service; berth sets it as for the service's Endpoints.
	Hostname *string `json:"hostname,omitempty"`
	// TargetRef is the pod behind the endpoint.
	TargetRef *ObjectReference `json:"targetRef,omitempty"`
	// NodeName is the node the endpoint's pod runs on.
	NodeName *string `json:"nodeName,omitempty"`
	// Zone is the topology.kubernetes.io/zone label of that node.
	Zone *string `json:"zone,omitempty"`
}

// EndpointConditions are the states of an endpoint, as Kubernetes' proxy
// reads them. Unset means unknown, read as ready and serving.
type EndpointConditions struct {
	// Ready says the endpoint takes new traffic: its pod is ready and not
	// terminating, or the service publishes not-ready addresses.
	Ready *bool `json:"ready,omitempty"`
	// Serving says the pod is ready, terminating or not: a proxy may send
	// it traffic when no endpoint is ready.
	Serving *bool `json:"serving,omitempty"`
	// Terminating says the pod is being deleted.
	Terminating *bool `json:"terminating,omitempty"`
}

// EndpointSlicePort is a port of every endpoint of a slice. Its fields are
// pointers, as in Kubernetes, so that a port with no number (all ports)
// differs from one with port 0.
type EndpointSlicePort struct {
	// Name is the service port's name, empty for an unnamed port; unique
	// in the slice.
	Name *string `json:"name,omitempty"`
	// Protocol is TCP (the default), UDP or SCTP.
	Protocol *Protocol `json:"protocol,omitempty"`
	// Port is the port on the endpoints, the service port's targetPort
	// resolved for their pods.
	Port *int32 `json:"port,omitempty"`
	// AppProtocol is the service port's appProtocol.
	AppProtocol *string `json:"appProtocol,omitempty"`
}
