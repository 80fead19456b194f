package table

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

// Node role labels, as kubeadm and kubectl read them.
const (
	labelNodeRolePrefix = "node-role.kubernetes.io/"
	labelNodeRole       = "kubernetes.io/role"
)

// nodeStatus renders a node's STATUS as kubectl does: Ready or NotReady
// from the Ready condition (Unknown when there is none), then
// SchedulingDisabled when the node is cordoned.
func nodeStatus(n *api.Node) string {
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == api.NodeReady {
			status = "NotReady"
			if c.Status == api.ConditionTrue {
				status = "Ready"
			}
			break
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// NodeRoles lists a node's roles from its node-role.kubernetes.io/<role>
// and kubernetes.io/role labels, sorted, as kubectl shows them.
func NodeRoles(n *api.Node) []string {
	var roles []string
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, labelNodeRolePrefix):
			if role := strings.TrimPrefix(k, labelNodeRolePrefix); role != "" {
				roles = append(roles, role)
			}
		case k == labelNodeRole && v != "":
			roles = append(roles, v)
		}
	}
	sort.Strings(roles)
	return slices.Compact(roles)
}

// nodeAddress returns the node's first address of a type.
func nodeAddress(n *api.Node, t api.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return ""
}

// serviceClusterIP is the service's first cluster IP ("None" for a
// headless service).
func serviceClusterIP(s *api.Service) string {
	if len(s.Spec.ClusterIPs) > 0 {
		return s.Spec.ClusterIPs[0]
	}
	return s.Spec.ClusterIP
}

// serviceExternalIP is kubectl's EXTERNAL-IP cell of a service.
func serviceExternalIP(s *api.Service) string {
	switch s.Spec.Type {
	case api.ServiceTypeExternalName:
		return s.Spec.ExternalName
	case api.ServiceTypeLoadBalancer:
		var ips []string
		for _, ing := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, ing.IP+ing.Hostname)
		}
		ips = append(ips, s.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	}
	return strings.Join(s.Spec.ExternalIPs, ",")
}

// ServicePorts renders a service's ports as kubectl does:
// `80/TCP,53/UDP`, `80:30080/TCP` with a node port.
func ServicePorts(ports []api.ServicePort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		if p.NodePort != 0 {
			parts[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		} else {
			parts[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		}
	}
	return strings.Join(parts, ",")
}

// maxEndpoints is how many addresses an ENDPOINTS cell lists before it
// says how many more there are.
const maxEndpoints = 3

// cellList gathers the items of a cell that lists at most maxEndpoints
// of them and counts the rest, as kubectl's ENDPOINTS and PORTS cells do.
type cellList struct {
	list  []string
	count int
}

func (c *cellList) add(s string) {
	c.count++
	if len(c.list) < maxEndpoints {
		c.list = append(c.list, s)
	}
}

// String reads `a,b,c + 2 more...`, or empty when there is nothing.
func (c *cellList) String() string {
	s := strings.Join(c.list, ",")
	if c.count > len(c.list) {
		s = fmt.Sprintf("%s + %d more...", s, c.count-len(c.list))
	}
	return s
}

// FormatEndpoints renders the ready addresses of an Endpoints object as
// kubectl does: `10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more...`. With
// a non-nil portNames, only ports of those names count (describe shows
// the endpoints of each service port).
func FormatEndpoints(ep *api.Endpoints, portNames map[string]bool) string {
	var c cellList
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			// A headless service may have no ports.
			for _, a := range ss.Addresses {
				c.add(a.IP)
			}
			continue
		}
		for _, port := range ss.Ports {
			if portNames != nil && !portNames[port.Name] {
				continue
			}
			for _, a := range ss.Addresses {
				c.add(net.JoinHostPort(a.IP, strconv.Itoa(int(port.Port))))
			}
		}
	}
	return c.String()
}

// SlicePorts renders the ports of an EndpointSlice as kubectl does: the
// numbers (a port without one by its name, else `*`), three at most, and
// `<unset>` for none.
func SlicePorts(ports []api.EndpointSlicePort) string {
	var c cellList
	for _, p := range ports {
		switch {
		case p.Port != nil:
			c.add(strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			c.add(*p.Name)
		default:
			c.add("*")
		}
	}
	return orUnset(c.String())
}

// SliceEndpoints renders the addresses of an EndpointSlice as kubectl
// does: every endpoint's, ready or not, three at most, and `<unset>` for
// none.
func SliceEndpoints(endpoints []api.Endpoint) string {
	var c cellList
	for _, e := range endpoints {
		for _, a := range e.Addresses {
			c.add(a)
		}
	}
	return orUnset(c.String())
}

func orUnset(s string) string {
	if s == "" {
		return "<unset>"
	}
	return s
}

// AccessModes abbreviates access modes as kubectl does, in its fixed
// order: RWO, ROX, RWX, RWOP.
func AccessModes(modes []api.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []struct {
		mode  api.PersistentVolumeAccessMode
		short string
	}{
		{api.ReadWriteOnce, "RWO"},
		{api.ReadOnlyMany, "ROX"},
		{api.ReadWriteMany, "RWX"},
		{api.ReadWriteOncePod, "RWOP"},
	} {
		if slices.Contains(modes, m.mode) {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

// betaStorageClassAnnotation names a claim's or volume's class in
// manifests older than storageClassName; Kubernetes still honours it.
const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// ClaimClass is the storage class a claim asks for.
func ClaimClass(c *api.PersistentVolumeClaim) string {
	if v, ok := c.Annotations[betaStorageClassAnnotation]; ok {
		return v
	}
	if c.Spec.StorageClassName != nil {
		return *c.Spec.StorageClassName
	}
	return ""
}

// VolumeClass is the storage class of a volume.
func VolumeClass(v *api.PersistentVolume) string {
	if c, ok := v.Annotations[betaStorageClassAnnotation]; ok {
		return c
	}
	return v.Spec.StorageClassName
}

// storageQuantity renders the storage entry of a resource list.
func storageQuantity(rl api.ResourceList) string {
	q := rl[api.ResourceStorage]
	return q.String()
}

// IsDefaultClass reports whether a StorageClass is the cluster's default.
func IsDefaultClass(sc *api.StorageClass) bool {
	return sc.Annotations[api.AnnotationDefaultStorageClass] == "true" ||
		sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] == "true"
}

// replicas reads a replica count, defaulting as Kubernetes does.
func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// containerNames and containerImages fill the CONTAINERS and IMAGES
// columns of workloads.
func containerNames(spec *api.PodSpec) string {
	names := make([]string, len(spec.Containers))
	for i, c := range spec.Containers {
		names[i] = c.Name
	}
	return strings.Join(names, ",")
}

func containerImages(spec *api.PodSpec) string {
	images := make([]string, len(spec.Containers))
	for i, c := range spec.Containers {
		images[i] = c.Image
	}
	return strings.Join(images, ",")
}

// FormatSelector renders a label selector as kubectl does.
func FormatSelector(s *metav1.LabelSelector) string {
	if s == nil {
		return ""
	}
	return metav1.FormatLabelSelector(s)
}

// quotaColumns renders the REQUEST and LIMIT cells of a ResourceQuota:
// `used/hard` per resource, limits.* in LIMIT and the rest in REQUEST.
// Before the quota controller has written status, the hard limits of the
// spec show with nothing used.
func quotaColumns(q *api.ResourceQuota) (request, limit string) {
	hard := q.Status.Hard
	if len(hard) == 0 {
		hard = q.Spec.Hard
	}
	names := make([]string, 0, len(hard))
	for n := range hard {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var req, lim []string
	for _, n := range names {
		used := q.Status.Used[api.ResourceName(n)]
		h := hard[api.ResourceName(n)]
		cell := fmt.Sprintf("%s: %s/%s", n, used.String(), h.String())
		if strings.HasPrefix(n, "limits.") {
			lim = append(lim, cell)
		} else {
			req = append(req, cell)
		}
	}
	return strings.Join(req, ", "), strings.Join(lim, ", ")
}

// EventObject names the object an event is about, as kubectl's OBJECT
// column does: `pod/web-1`.
func EventObject(e *api.Event) string {
	kind := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name == "" {
		return kind
	}
	return kind + "/" + e.InvolvedObject.Name
}

// EventSource renders who recorded an event: `component, host`.
func EventSource(s api.EventSource) string {
	if s.Host == "" {
		return s.Component
	}
	return s.Component + ", " + s.Host
}

// eventLastSeen is when an event last happened: lastTimestamp, else
// firstTimestamp.
func eventLastSeen(e *api.Event) metav1.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp
	}
	return e.FirstTimestamp
}

// shortHashLen is how much of a commit SHA or content hash a table shows,
// as `git log --oneline` abbreviates.
const shortHashLen = 12

// ShortRevision shortens a source revision for a table: a git SHA (40 or
// 64 hex digits) to its first 12, and an `algorithm:hex` content hash to
// `algorithm:` and 12 hex digits. Anything else is shown whole.
func ShortRevision(rev string) string {
	prefix, hash := "", rev
	if i := strings.LastIndexByte(rev, ':'); i >= 0 {
		prefix, hash = rev[:i+1], rev[i+1:]
	}
	if len(hash) <= shortHashLen || !isHex(hash) {
		return rev
	}
	return prefix + hash[:shortHashLen]
}

func isHex(s string) bool {
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F') {
			return false
		}
	}
	return s != ""
}

// SourceReady returns a source's Ready condition, or nil before its
// first sync.
func SourceReady(s *api.Source) *metav1.Condition {
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == api.SourceReady {
			return &s.Status.Conditions[i]
		}
	}
	return nil
}

// SourceMessage is a Source's Ready message on one line: its first line
// and, for a revision refused, its first error whole, with the file,
// document and field it names.
func SourceMessage(s *api.Source) string {
	c := SourceReady(s)
	if c == nil {
		return ""
	}
	first, rest, _ := strings.Cut(c.Message, "\n")
	if next, _, _ := strings.Cut(rest, "\n"); next != "" {
		return first + " " + next
	}
	return first
}

// budgetCount renders a budget's minAvailable or maxUnavailable as kubectl
// does: N/A when it is not set.
func budgetCount(v *intstr.IntOrString) string {
	if v == nil {
		return "N/A"
	}
	return v.String()
}

// AlertSources is an Alert's selection of Sources on one line: the names
// (or "*"), then the label selector.
func AlertSources(a *api.Alert) string {
	out := strings.Join(a.Spec.Sources, ",")
	if sel := a.Spec.SourceSelector; sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err == nil {
			out = strings.TrimPrefix(out+","+s.String(), ",")
		}
	}
	return out
}
