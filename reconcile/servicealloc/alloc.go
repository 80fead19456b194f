package servicealloc

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var serviceKind = api.MustLookupResource("services")

// Allocator hands out virtual IPs and node ports. It keeps no state of
// its own: what is taken is read through the store's indexes in the
// transaction that writes the Service, so that two writes never take
// the same address, and a restart or another control plane taking the
// lead starts from exactly what the store holds.
type Allocator struct {
	cidrs []CIDR
	ports PortRange
}

// New makes an allocator over the service CIDRs (the first is the
// primary family) and the node port range.
func New(cidrs []CIDR, ports PortRange) *Allocator {
	return &Allocator{cidrs: cidrs, ports: ports}
}

// CIDRs are the service ranges, the primary first.
func (a *Allocator) CIDRs() []CIDR { return a.cidrs }

// Admit is the store hook that allocates. A Service created or updated
// with an empty clusterIP gets a free address of each family its
// ipFamilyPolicy asks for; one that names an address gets it if the
// range holds it and no other Service does, else Kubernetes' error. Node
// ports likewise for NodePort and LoadBalancer services. Addresses and
// ports a Service already held are its own: a narrower range at a
// restart does not take them away. A delete frees them with the object.
func (a *Allocator) Admit(tx *store.Txn, k *api.Kind, obj, old api.Object) error {
	if k != serviceKind || obj == nil {
		return nil
	}
	svc := obj.(*api.Service)
	var prev *api.Service
	if old != nil {
		prev = old.(*api.Service)
	}
	if svc.Spec.Type == api.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, a.allocateIPs(tx, svc, prev)...)
	if len(errs) == 0 {
		errs = append(errs, a.allocatePorts(tx, svc, prev)...)
	}
	if len(errs) > 0 {
		if len(errs) == 1 && errs[0].Type == field.ErrorTypeInternal {
			return apierrors.NewInternalError(fmt.Errorf("%s", errs[0].Detail))
		}
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, errs)
	}
	return nil
}

// families is the IP families a service gets, in order, per its policy
// and what it asked for; or an error naming the field.
func (a *Allocator) families(spec *api.ServiceSpec, p *field.Path) ([]corev1.IPFamily, *field.Error) {
	configured := make([]corev1.IPFamily, len(a.cidrs))
	for i, c := range a.cidrs {
		configured[i] = c.Family()
	}
	var asked []corev1.IPFamily
	asked = append(asked, spec.IPFamilies...)
	for i, ip := range spec.ClusterIPs {
		if addr, err := netip.ParseAddr(ip); err == nil && i >= len(asked) {
			asked = append(asked, familyOf(addr))
		}
	}
	for i, f := range asked {
		if !slices.Contains(configured, f) {
			return nil, field.Invalid(p.Child("ipFamilies").Index(i), f, "not configured on this cluster")
		}
	}
	policy := corev1.IPFamilyPolicySingleStack
	if spec.IPFamilyPolicy != nil {
		policy = *spec.IPFamilyPolicy
	}
	if policy == corev1.IPFamilyPolicyRequireDualStack && len(configured) < 2 {
		return nil, field.Invalid(p.Child("ipFamilyPolicy"), policy, "this cluster is not configured for dual-stack services")
	}
	out := slices.Clone(asked)
	if len(out) == 0 {
		out = append(out, configured[0])
	}
	if policy != corev1.IPFamilyPolicySingleStack {
		for _, f := range configured {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out[:min(len(out), 2)], nil
}

func (a *Allocator) cidrOf(f corev1.IPFamily) CIDR {
	for _, c := range a.cidrs {
		if c.Family() == f {
			return c
		}
	}
	return CIDR{}
}

func (a *Allocator) allocateIPs(tx *store.Txn, svc, prev *api.Service) field.ErrorList {
	spec := &svc.Spec
	p := field.NewPath("spec")
	fams, ferr := a.families(spec, p)
	if ferr != nil {
		return field.ErrorList{ferr}
	}
	if spec.IPFamilyPolicy == nil {
		pol := corev1.IPFamilyPolicySingleStack
		spec.IPFamilyPolicy = &pol
	}
	spec.IPFamilies = fams
	if spec.ClusterIP == api.ClusterIPNone || len(spec.ClusterIPs) > 0 && spec.ClusterIPs[0] == api.ClusterIPNone {
		spec.ClusterIP, spec.ClusterIPs = api.ClusterIPNone, []string{api.ClusterIPNone}
		return nil
	}
	if len(spec.ClusterIPs) == 0 && spec.ClusterIP != "" {
		spec.ClusterIPs = []string{spec.ClusterIP}
	}
	var held []string
	if prev != nil {
		held = api.ServiceClusterIPs(prev)
	}
	ips := make([]string, len(fams))
	for i, f := range fams {
		c := a.cidrOf(f)
		if i >= len(spec.ClusterIPs) || spec.ClusterIPs[i] == "" {
			ip, ok := a.freeIP(tx, c, svc, ips)
			if !ok {
				return field.ErrorList{field.InternalError(p.Child("clusterIPs"), fmt.Errorf("failed to allocate a serviceIP: range %s is full", c))}
			}
			ips[i] = ip
			continue
		}
		ip := spec.ClusterIPs[i]
		ips[i] = ip
		if slices.Contains(held, ip) {
			continue
		}
		addr, err := netip.ParseAddr(ip)
		ipp := p.Child("clusterIPs")
		switch {
		case err != nil:
			return field.ErrorList{field.Invalid(ipp.Index(i), ip, "must be a valid IP address")}
		case familyOf(addr) != f:
			return field.ErrorList{field.Invalid(p.Child("ipFamilies").Index(i), f, fmt.Sprintf("does not match the family of clusterIPs[%d] %s", i, ip))}
		case !c.contains(addr):
			return field.ErrorList{field.Invalid(ipp, spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", ip, ip, c))}
		case heldByOther(tx, store.IndexClusterIP, ip, svc):
			return field.ErrorList{field.Invalid(ipp, spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: provided IP is already allocated", ip))}
		}
	}
	spec.ClusterIPs, spec.ClusterIP = ips, ips[0]
	return nil
}

// heldByOther tells whether a Service other than svc holds value under
// the index.
func heldByOther(tx *store.Txn, index, value string, svc *api.Service) bool {
	held := false
	_ = tx.Each(serviceKind, store.Filter{Index: index, Value: value}, func(o api.Object) bool {
		held = o.GetNamespace() != svc.Namespace || o.GetName() != svc.Name
		return !held
	})
	return held
}

// freeIP draws a free address of c: a random start, then the next free
// one after it, as Kubernetes' bitmap allocator does. taken are the
// addresses this write already drew.
func (a *Allocator) freeIP(tx *store.Txn, c CIDR, svc *api.Service, taken []string) (string, bool) {
	start := rand.Int64N(c.size)
	for i := range c.size {
		ip := c.nth((start + i) % c.size).String()
		if !slices.Contains(taken, ip) && !heldByOther(tx, store.IndexClusterIP, ip, svc) {
			return ip, true
		}
	}
	return "", false
}

func (a *Allocator) allocatePorts(tx *store.Txn, svc, prev *api.Service) field.ErrorList {
	spec := &svc.Spec
	allocate := spec.Type == api.ServiceTypeNodePort ||
		spec.Type == api.ServiceTypeLoadBalancer && (spec.AllocateLoadBalancerNodePorts == nil || *spec.AllocateLoadBalancerNodePorts)
	var held []string
	if prev != nil {
		held = api.ServiceNodePorts(prev)
	}
	var errs field.ErrorList
	// byPort: a port number served over two protocols gets one node port.
	byPort := map[int32]int32{}
	var mine []int32
	for i := range spec.Ports {
		port := &spec.Ports[i]
		np := field.NewPath("spec", "ports").Index(i).Child("nodePort")
		if port.NodePort == 0 {
			continue
		}
		byPort[port.Port] = port.NodePort
		mine = append(mine, port.NodePort)
		key := strconv.Itoa(int(port.NodePort))
		switch {
		case slices.Contains(held, key):
		case !a.ports.contains(port.NodePort):
			errs = append(errs, field.Invalid(np, port.NodePort, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", a.ports)))
		case heldByOther(tx, store.IndexNodePort, key, svc):
			errs = append(errs, field.Invalid(np, port.NodePort, "provided port is already allocated"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if allocate {
		// The ports named come first, as Kubernetes allocates them: a
		// healthCheckNodePort asked for, or held before, is not drawn
		// for a port.
		avoid := slices.Clone(mine)
		if n := spec.HealthCheckNodePort; n != 0 {
			avoid = append(avoid, n)
		}
		if prev != nil && prev.Spec.HealthCheckNodePort != 0 {
			avoid = append(avoid, prev.Spec.HealthCheckNodePort)
		}
		for i := range spec.Ports {
			port := &spec.Ports[i]
			if port.NodePort != 0 {
				continue
			}
			if n, ok := byPort[port.Port]; ok {
				port.NodePort = n
				continue
			}
			n, ok := a.freePort(tx, svc, avoid)
			if !ok {
				return field.ErrorList{field.InternalError(field.NewPath("spec", "ports").Index(i).Child("nodePort"), fmt.Errorf("failed to allocate a nodePort: range %s is full", a.ports))}
			}
			port.NodePort, byPort[port.Port] = n, n
			mine, avoid = append(mine, n), append(avoid, n)
		}
	}
	return a.allocateHealthCheckPort(tx, svc, prev, held, mine)
}

// allocateHealthCheckPort gives a LoadBalancer Service of
// externalTrafficPolicy Local its healthCheckNodePort, from the node
// port range as Kubernetes does: the one it asks for if free, the one it
// held if it asks for none, else a free one. A Service that no longer
// needs one (its type or policy changed) lets it go; one that never did
// may not ask for one.
func (a *Allocator) allocateHealthCheckPort(tx *store.Txn, svc, prev *api.Service, held []string, mine []int32) field.ErrorList {
	spec := &svc.Spec
	p := field.NewPath("spec", "healthCheckNodePort")
	if !api.NeedsHealthCheckNodePort(svc) {
		switch {
		case spec.HealthCheckNodePort == 0:
		case prev != nil && prev.Spec.HealthCheckNodePort == spec.HealthCheckNodePort:
			spec.HealthCheckNodePort = 0
		default:
			return field.ErrorList{field.Invalid(p, spec.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'")}
		}
		return nil
	}
	if spec.HealthCheckNodePort == 0 && prev != nil && api.NeedsHealthCheckNodePort(prev) {
		spec.HealthCheckNodePort = prev.Spec.HealthCheckNodePort
	}
	if n := spec.HealthCheckNodePort; n != 0 {
		key := strconv.Itoa(int(n))
		switch {
		case slices.Contains(mine, n):
			return field.ErrorList{field.Invalid(p, n, "provided port is already allocated")}
		case slices.Contains(held, key):
		case !a.ports.contains(n):
			return field.ErrorList{field.Invalid(p, n, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", a.ports))}
		case heldByOther(tx, store.IndexNodePort, key, svc):
			return field.ErrorList{field.Invalid(p, n, "provided port is already allocated")}
		}
		return nil
	}
	n, ok := a.freePort(tx, svc, mine)
	if !ok {
		return field.ErrorList{field.InternalError(p, fmt.Errorf("failed to allocate a healthCheckNodePort: range %s is full", a.ports))}
	}
	spec.HealthCheckNodePort = n
	return nil
}

func (a *Allocator) freePort(tx *store.Txn, svc *api.Service, taken []int32) (int32, bool) {
	start := rand.Int32N(a.ports.Size)
	for i := range a.ports.Size {
		n := a.ports.Base + (start+i)%a.ports.Size
		if !slices.Contains(taken, n) && !heldByOther(tx, store.IndexNodePort, strconv.Itoa(int(n)), svc) {
			return n, true
		}
	}
	return 0, false
}
