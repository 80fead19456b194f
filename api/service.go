package api

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +kubebuilder:object:root=true

// Service names a set of pods behind a virtual IP (its clusterIP), which
// every node's proxy balances over the ready ones, and in DNS.
type Service struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which pods the service names and on which ports.
	Spec ServiceSpec `json:"spec,omitempty"`
	// Status holds the addresses a LoadBalancer service is served on.
	Status ServiceStatus `json:"status,omitempty"`
}

// ServiceType is how a service is exposed.
type ServiceType string

// Service types.
const (
	ServiceTypeClusterIP    ServiceType = "ClusterIP"
	ServiceTypeNodePort     ServiceType = "NodePort"
	ServiceTypeLoadBalancer ServiceType = "LoadBalancer"
	ServiceTypeExternalName ServiceType = "ExternalName"
)

// ClusterIPNone marks a headless service.
const ClusterIPNone = "None"

// ServiceSpec describes a service.
type ServiceSpec struct {
	// Type is ClusterIP (the default): a virtual IP in the cluster;
	// NodePort: that, and a port on every node's addresses; LoadBalancer:
	// that, and the service's ports on the nodes' addresses, which the
	// status lists; or ExternalName, whose name is an alias of
	// externalName.
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
	// ClusterIP is the service's virtual IP, from the control plane's
	// --service-cidr: empty to be given a free one, an address of the
	// range to ask for it, or None for a headless service, whose name
	// resolves to its endpoints. An update that leaves it out keeps it.
	ClusterIP string `json:"clusterIP,omitempty"`
	// ClusterIPs is clusterIP and, for a dual-stack service, the address
	// of the other family; its first entry is clusterIP.
	// +listType=atomic
	ClusterIPs []string `json:"clusterIPs,omitempty"`
	// IPFamilies are the families of clusterIPs, in their order; filled in
	// from the service CIDR.
	// +listType=atomic
	IPFamilies []corev1.IPFamily `json:"ipFamilies,omitempty"`
	// IPFamilyPolicy is SingleStack (the default), PreferDualStack or
	// RequireDualStack; the last needs a service CIDR of each family.
	IPFamilyPolicy *corev1.IPFamilyPolicy `json:"ipFamilyPolicy,omitempty"`
	// ExternalName is the host name an ExternalName service is a DNS alias
	// (CNAME) of.
	ExternalName string `json:"externalName,omitempty"`
	// PublishNotReadyAddresses counts every pod the service selects as
	// ready, in its Endpoints and in DNS, terminating ones too.
	PublishNotReadyAddresses bool `json:"publishNotReadyAddresses,omitempty"`
	// SessionAffinity is None (the default) or ClientIP: a client's
	// connections go to the endpoint its first one went to, for
	// sessionAffinityConfig.clientIP.timeoutSeconds (3 hours by default).
	SessionAffinity corev1.ServiceAffinity `json:"sessionAffinity,omitempty"`
	// SessionAffinityConfig holds the ClientIP affinity's timeout.
	SessionAffinityConfig *corev1.SessionAffinityConfig `json:"sessionAffinityConfig,omitempty"`
	// ExternalIPs are more addresses the nodes' proxies serve the
	// service's ports on.
	// +listType=atomic
	ExternalIPs []string `json:"externalIPs,omitempty"`
	// LoadBalancerIP is checked and kept, and otherwise unused (deprecated
	// in Kubernetes too).
	LoadBalancerIP string `json:"loadBalancerIP,omitempty"`
	// LoadBalancerSourceRanges are the client ranges a LoadBalancer
	// service's load-balancer addresses take connections from: the
	// nodes' proxies drop the others. Empty takes every client.
	// +listType=atomic
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`
	// ExternalTrafficPolicy is Cluster (the default for NodePort and
	// LoadBalancer services) or Local: traffic from outside the cluster
	// to a node port or load-balancer address goes only to endpoints on
	// the node it reached, keeping the client's address.
	ExternalTrafficPolicy corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`
	// HealthCheckNodePort is the node port, from the node port range,
	// on which each node answers an external load balancer whether it
	// has a ready endpoint of the Service (200) or none (503): allocated
	// for a LoadBalancer Service of externalTrafficPolicy Local unless
	// given, and only for one.
	HealthCheckNodePort int32 `json:"healthCheckNodePort,omitempty"`
	// AllocateLoadBalancerNodePorts: a LoadBalancer service gets node
	// ports unless this is false.
	AllocateLoadBalancerNodePorts *bool `json:"allocateLoadBalancerNodePorts,omitempty"`
	// LoadBalancerClass names another load balancer; berth's nodes serve
	// only LoadBalancer services without one.
	LoadBalancerClass *string `json:"loadBalancerClass,omitempty"`
	// InternalTrafficPolicy is Cluster (the default) or Local: traffic
	// from pods to the clusterIP goes only to endpoints on their node.
	InternalTrafficPolicy *corev1.ServiceInternalTrafficPolicy `json:"internalTrafficPolicy,omitempty"`
	// TrafficDistribution is checked and kept, and otherwise unused.
	TrafficDistribution *string `json:"trafficDistribution,omitempty"`
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
	// Port is the service's port number on its clusterIP, and
	// targetPort's default.
	Port int32 `json:"port"`
	// TargetPort is the port on the pods, a number or the name of a
	// container port; port by default. Endpoints and SRV records carry it
	// resolved.
	TargetPort intstr.IntOrString `json:"targetPort,omitempty"`
	// NodePort is the port a NodePort or LoadBalancer service answers on
	// at every node's addresses, from the control plane's
	// --service-node-port-range: 0 to be given a free one.
	NodePort int32 `json:"nodePort,omitempty"`
}

// ServiceStatus is where a LoadBalancer service is served.
type ServiceStatus struct {
	// LoadBalancer lists the addresses a LoadBalancer service answers on:
	// the nodes' addresses, as k3s's ServiceLB fills it in.
	LoadBalancer corev1.LoadBalancerStatus `json:"loadBalancer,omitempty"`
	// Conditions are the service's conditions; berth sets none.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

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

// ServiceClusterIPs are the virtual IPs a service holds: none for a
// headless or ExternalName service.
func ServiceClusterIPs(svc *Service) []string {
	if svc.Spec.Type == ServiceTypeExternalName {
		return nil
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []string
	for _, ip := range ips {
		if ip != "" && ip != ClusterIPNone {
			out = append(out, ip)
		}
	}
	return out
}

// ServiceNodePorts are the node ports a service holds, as decimal
// numbers: a node port is one service's whatever the protocol, as in
// Kubernetes.
func ServiceNodePorts(svc *Service) []string {
	var out []string
	add := func(port int32) {
		if k := strconv.Itoa(int(port)); port != 0 && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, p := range svc.Spec.Ports {
		add(p.NodePort)
	}
	add(svc.Spec.HealthCheckNodePort)
	return out
}

// NeedsHealthCheckNodePort says whether a Service has a health check node
// port: a LoadBalancer whose external traffic keeps to the endpoints of
// the node it reaches (externalTrafficPolicy Local), as Kubernetes gives
// it one.
func NeedsHealthCheckNodePort(svc *Service) bool {
	return svc.Spec.Type == ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// AnnotationLoadBalancerSourceRanges is the older form of
// spec.loadBalancerSourceRanges: comma-separated ranges, read only when
// the field is empty, as Kubernetes reads it.
const AnnotationLoadBalancerSourceRanges = "service.beta.kubernetes.io/load-balancer-source-ranges"

// LoadBalancerSourceRanges are the client ranges of a Service: the
// field, else the annotation's ranges; none takes every client.
func LoadBalancerSourceRanges(svc *Service) []string {
	if len(svc.Spec.LoadBalancerSourceRanges) > 0 {
		return svc.Spec.LoadBalancerSourceRanges
	}
	var out []string
	for _, r := range strings.Split(svc.Annotations[AnnotationLoadBalancerSourceRanges], ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}
