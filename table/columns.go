package table

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
)

// Columns every kind shares.
var (
	nameColumn = Column{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace.",
		cell: func(o api.Object, _ time.Time) string { return o.GetName() }}
	ageColumn = Column{Name: "Age", Type: "string", Description: "Time since the object was created.",
		cell: func(o api.Object, now time.Time) string { return Age(o.GetCreationTimestamp(), now) }}
	// createdAtColumn is the creation time in RFC 3339, not an age, as
	// kubectl prints it for roles and limit ranges.
	createdAtColumn = Column{Name: "Created At", Type: "date", Description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
		cell: func(o api.Object, _ time.Time) string { return o.GetCreationTimestamp().UTC().Format(time.RFC3339) }}
)

// Wide columns of the workloads (Deployment, ReplicaSet,
// ReplicationController), which differ only in where the template is.
func templateColumns[T api.Object](spec func(T) *api.PodSpec, selector func(T) string) []Column {
	return []Column{
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template.",
			cell: on(func(o T, _ time.Time) string { return containerNames(spec(o)) })},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template.",
			cell: on(func(o T, _ time.Time) string { return containerImages(spec(o)) })},
		{Name: "Selector", Type: "string", Priority: 1, Description: "Label query over pods that should match the replica count.",
			cell: on(func(o T, _ time.Time) string { return selector(o) })},
	}
}

func intCell(n int32) string { return strconv.Itoa(int(n)) }

// definitions holds the columns of each kind, keyed by kind name, in
// kubectl's order (kubernetes/pkg/printers/internalversion).
var definitions = map[string][]Column{
	// As Kubernetes shows a CRD: when it was made, as a timestamp.
	"CustomResourceDefinition": {
		nameColumn,
		{Name: "Created At", Type: "date", Description: "When the definition was created.",
			cell: func(o api.Object, _ time.Time) string {
				return o.GetCreationTimestamp().UTC().Format(time.RFC3339)
			}},
	},
	"Pod": {
		nameColumn,
		{Name: "Ready", Type: "string", Description: "Ready containers out of all containers.",
			cell: on(func(p *api.Pod, _ time.Time) string {
				r := summarizePod(p)
				return fmt.Sprintf("%d/%d", r.ready, r.total)
			})},
		{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod.",
			cell: on(func(p *api.Pod, _ time.Time) string { return summarizePod(p).status })},
		{Name: "Restarts", Type: "string", Description: "Container restarts, and when the last one happened.",
			cell: on(func(p *api.Pod, now time.Time) string { return summarizePod(p).restartsCell(now) })},
		ageColumn,
		{Name: "IP", Type: "string", Priority: 1, Description: "IP address of the pod.",
			cell: on(func(p *api.Pod, _ time.Time) string { return podIP(p) })},
		{Name: "Node", Type: "string", Priority: 1, Description: "Node the pod is bound to.",
			cell: on(func(p *api.Pod, _ time.Time) string { return p.Spec.NodeName })},
	},
	"Node": {
		nameColumn,
		{Name: "Status", Type: "string", Description: "The status of the node.",
			cell: on(func(n *api.Node, _ time.Time) string { return nodeStatus(n) })},
		{Name: "Roles", Type: "string", Description: "The roles of the node.",
			cell: on(func(n *api.Node, _ time.Time) string { return strings.Join(NodeRoles(n), ",") })},
		ageColumn,
		{Name: "Version", Type: "string", Description: "Version of the node agent.",
			cell: on(func(n *api.Node, _ time.Time) string { return n.Status.NodeInfo.KubeletVersion })},
		{Name: "Internal-IP", Type: "string", Priority: 1, Description: "The node's first internal IP.",
			cell: on(func(n *api.Node, _ time.Time) string { return nodeAddress(n, api.NodeInternalIP) })},
		{Name: "External-IP", Type: "string", Priority: 1, Description: "The node's first external IP.",
			cell: on(func(n *api.Node, _ time.Time) string { return nodeAddress(n, api.NodeExternalIP) })},
		{Name: "OS-Image", Type: "string", Priority: 1, Description: "Operating system image.",
			cell: on(func(n *api.Node, _ time.Time) string { return orUnknown(n.Status.NodeInfo.OSImage) })},
		{Name: "Kernel-Version", Type: "string", Priority: 1, Description: "Kernel version.",
			cell: on(func(n *api.Node, _ time.Time) string { return orUnknown(n.Status.NodeInfo.KernelVersion) })},
		{Name: "Container-Runtime", Type: "string", Priority: 1, Description: "Runtime that runs the pods.",
			cell: on(func(n *api.Node, _ time.Time) string { return orUnknown(n.Status.NodeInfo.ContainerRuntimeVersion) })},
	},
	"Service": {
		nameColumn,
		{Name: "Type", Type: "string", Description: "How the service is exposed.",
			cell: on(func(s *api.Service, _ time.Time) string { return string(s.Spec.Type) })},
		{Name: "Cluster-IP", Type: "string", Description: "The service's cluster IP, None when headless.",
			cell: on(func(s *api.Service, _ time.Time) string { return serviceClusterIP(s) })},
		{Name: "External-IP", Type: "string", Description: "The external name of an ExternalName service, the load-balancer addresses of a LoadBalancer one (<pending> until it has some), and the external IPs.",
			cell: on(func(s *api.Service, _ time.Time) string { return serviceExternalIP(s) })},
		{Name: "Port(s)", Type: "string", Description: "The ports the service exposes.",
			cell: on(func(s *api.Service, _ time.Time) string { return ServicePorts(s.Spec.Ports) })},
		ageColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: "The pods the service routes to.",
			cell: on(func(s *api.Service, _ time.Time) string { return labels.FormatLabels(s.Spec.Selector) })},
	},
	"Endpoints": {
		nameColumn,
		{Name: "Endpoints", Type: "string", Description: "Ready addresses behind the service.",
			cell: on(func(e *api.Endpoints, _ time.Time) string { return FormatEndpoints(e, nil) })},
		ageColumn,
	},
	"EndpointSlice": {
		nameColumn,
		{Name: "AddressType", Type: "string", Description: "The type of every address of the slice: IPv4, IPv6 or FQDN.",
			cell: on(func(e *api.EndpointSlice, _ time.Time) string { return string(e.AddressType) })},
		{Name: "Ports", Type: "string", Description: "The ports every endpoint of the slice serves.",
			cell: on(func(e *api.EndpointSlice, _ time.Time) string { return SlicePorts(e.Ports) })},
		{Name: "Endpoints", Type: "string", Description: "The addresses of the slice's endpoints, ready or not.",
			cell: on(func(e *api.EndpointSlice, _ time.Time) string { return SliceEndpoints(e.Endpoints) })},
		ageColumn,
	},
	"Deployment": append([]Column{
		nameColumn,
		{Name: "Ready", Type: "string", Description: "Ready replicas out of desired replicas.",
			cell: on(func(d *api.Deployment, _ time.Time) string {
				return fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d.Spec.Replicas))
			})},
		{Name: "Up-to-date", Type: "integer", Description: "Replicas running the current pod template.",
			cell: on(func(d *api.Deployment, _ time.Time) string { return intCell(d.Status.UpdatedReplicas) })},
		{Name: "Available", Type: "integer", Description: "Replicas available to serve.",
			cell: on(func(d *api.Deployment, _ time.Time) string { return intCell(d.Status.AvailableReplicas) })},
		ageColumn,
	}, templateColumns(
		func(d *api.Deployment) *api.PodSpec { return &d.Spec.Template.Spec },
		func(d *api.Deployment) string { return FormatSelector(d.Spec.Selector) },
	)...),
	"StatefulSet": append([]Column{
		nameColumn,
		{Name: "Ready", Type: "string", Description: "Number of the pods ready out of desired replicas.",
			cell: on(func(s *api.StatefulSet, _ time.Time) string {
				return fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, replicas(s.Spec.Replicas))
			})},
		ageColumn,
	}, templateColumns(
		func(s *api.StatefulSet) *api.PodSpec { return &s.Spec.Template.Spec },
		func(s *api.StatefulSet) string { return FormatSelector(s.Spec.Selector) },
	)[:2]...),
	"DaemonSet": append([]Column{
		nameColumn,
		{Name: "Desired", Type: "integer", Description: "The number of nodes that should be running the daemon pod.",
			cell: on(func(d *api.DaemonSet, _ time.Time) string { return intCell(d.Status.DesiredNumberScheduled) })},
		{Name: "Current", Type: "integer", Description: "The number of nodes running at least one daemon pod and supposed to.",
			cell: on(func(d *api.DaemonSet, _ time.Time) string { return intCell(d.Status.CurrentNumberScheduled) })},
		{Name: "Ready", Type: "integer", Description: "The number of nodes that should be running the daemon pod and have one ready.",
			cell: on(func(d *api.DaemonSet, _ time.Time) string { return intCell(d.Status.NumberReady) })},
		{Name: "Up-to-date", Type: "integer", Description: "The number of nodes running the current pod template.",
			cell: on(func(d *api.DaemonSet, _ time.Time) string { return intCell(d.Status.UpdatedNumberScheduled) })},
		{Name: "Available", Type: "integer", Description: "The number of nodes running a daemon pod available for minReadySeconds.",
			cell: on(func(d *api.DaemonSet, _ time.Time) string { return intCell(d.Status.NumberAvailable) })},
		{Name: "Node Selector", Type: "string", Description: "The node selector of the pod template.",
			cell: on(func(d *api.DaemonSet, _ time.Time) string {
				if len(d.Spec.Template.Spec.NodeSelector) == 0 {
					return "<none>"
				}
				return labels.FormatLabels(d.Spec.Template.Spec.NodeSelector)
			})},
		ageColumn,
	}, templateColumns(
		func(d *api.DaemonSet) *api.PodSpec { return &d.Spec.Template.Spec },
		func(d *api.DaemonSet) string { return FormatSelector(d.Spec.Selector) },
	)...),
	"ControllerRevision": {
		nameColumn,
		{Name: "Controller", Type: "string", Description: "The controller the revision belongs to.",
			cell: on(func(r *api.ControllerRevision, _ time.Time) string {
				ref := api.ControllerOf(r)
				if ref == nil {
					return "<none>"
				}
				group := ""
				if i := strings.Index(ref.APIVersion, "/"); i >= 0 {
					group = "." + ref.APIVersion[:i]
				}
				return strings.ToLower(ref.Kind) + group + "/" + ref.Name
			})},
		{Name: "Revision", Type: "integer", Description: "The revision number.",
			cell: on(func(r *api.ControllerRevision, _ time.Time) string { return strconv.FormatInt(r.Revision, 10) })},
		ageColumn,
	},
	"ReplicaSet": append(replicaColumns(
		on(func(r *api.ReplicaSet, _ time.Time) string { return intCell(replicas(r.Spec.Replicas)) }),
		on(func(r *api.ReplicaSet, _ time.Time) string { return intCell(r.Status.Replicas) }),
		on(func(r *api.ReplicaSet, _ time.Time) string { return intCell(r.Status.ReadyReplicas) }),
	), templateColumns(
		func(r *api.ReplicaSet) *api.PodSpec { return &r.Spec.Template.Spec },
		func(r *api.ReplicaSet) string { return FormatSelector(r.Spec.Selector) },
	)...),
	"ReplicationController": append(replicaColumns(
		on(func(r *api.ReplicationController, _ time.Time) string { return intCell(replicas(r.Spec.Replicas)) }),
		on(func(r *api.ReplicationController, _ time.Time) string { return intCell(r.Status.Replicas) }),
		on(func(r *api.ReplicationController, _ time.Time) string { return intCell(r.Status.ReadyReplicas) }),
	), templateColumns(
		func(r *api.ReplicationController) *api.PodSpec {
			if r.Spec.Template != nil {
				return &r.Spec.Template.Spec
			}
			return &api.PodSpec{}
		},
		func(r *api.ReplicationController) string { return labels.FormatLabels(r.Spec.Selector) },
	)...),
	"PersistentVolumeClaim": {
		nameColumn,
		{Name: "Status", Type: "string", Description: "Phase of the claim.",
			cell: on(func(c *api.PersistentVolumeClaim, _ time.Time) string {
				if c.DeletionTimestamp != nil {
					return "Terminating"
				}
				return string(c.Status.Phase)
			})},
		{Name: "Volume", Type: "string", Description: "The volume bound to the claim.",
			cell: on(func(c *api.PersistentVolumeClaim, _ time.Time) string { return c.Spec.VolumeName })},
		{Name: "Capacity", Type: "string", Description: "Capacity of the bound volume.",
			cell: on(func(c *api.PersistentVolumeClaim, _ time.Time) string {
				if c.Spec.VolumeName == "" {
					return ""
				}
				return storageQuantity(c.Status.Capacity)
			})},
		{Name: "Access Modes", Type: "string", Description: "Access modes of the bound volume.",
			cell: on(func(c *api.PersistentVolumeClaim, _ time.Time) string {
				if c.Spec.VolumeName == "" {
					return ""
				}
				return AccessModes(c.Status.AccessModes)
			})},
		{Name: "StorageClass", Type: "string", Description: "Storage class the claim asks for.",
			cell: on(func(c *api.PersistentVolumeClaim, _ time.Time) string { return ClaimClass(c) })},
		ageColumn,
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: "Filesystem or Block.",
			cell: on(func(c *api.PersistentVolumeClaim, _ time.Time) string { return volumeMode(c.Spec.VolumeMode) })},
	},
	"PersistentVolume": {
		nameColumn,
		{Name: "Capacity", Type: "string", Description: "Capacity of the volume.",
			cell: on(func(v *api.PersistentVolume, _ time.Time) string { return storageQuantity(v.Spec.Capacity) })},
		{Name: "Access Modes", Type: "string", Description: "How the volume may be mounted.",
			cell: on(func(v *api.PersistentVolume, _ time.Time) string { return AccessModes(v.Spec.AccessModes) })},
		{Name: "Reclaim Policy", Type: "string", Description: "What happens to the volume when its claim is released.",
			cell: on(func(v *api.PersistentVolume, _ time.Time) string { return string(v.Spec.PersistentVolumeReclaimPolicy) })},
		{Name: "Status", Type: "string", Description: "Phase of the volume.",
			cell: on(func(v *api.PersistentVolume, _ time.Time) string {
				if v.DeletionTimestamp != nil {
					return "Terminating"
				}
				return string(v.Status.Phase)
			})},
		{Name: "Claim", Type: "string", Description: "The claim bound to the volume.",
			cell: on(func(v *api.PersistentVolume, _ time.Time) string {
				if v.Spec.ClaimRef == nil {
					return ""
				}
				return v.Spec.ClaimRef.Namespace + "/" + v.Spec.ClaimRef.Name
			})},
		{Name: "StorageClass", Type: "string", Description: "Storage class of the volume.",
			cell: on(func(v *api.PersistentVolume, _ time.Time) string { return VolumeClass(v) })},
		ageColumn,
		{Name: "Reason", Type: "string", Priority: 1, Description: "Why the volume is in its phase.",
			cell: on(func(v *api.PersistentVolume, _ time.Time) string { return v.Status.Reason })},
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: "Filesystem or Block.",
			cell: on(func(v *api.PersistentVolume, _ time.Time) string { return volumeMode(v.Spec.VolumeMode) })},
	},
	"StorageClass": {
		{Name: "Name", Type: "string", Format: "name", Description: "Name of the class; (default) marks the default class.",
			cell: on(func(sc *api.StorageClass, _ time.Time) string {
				if IsDefaultClass(sc) {
					return sc.Name + " (default)"
				}
				return sc.Name
			})},
		{Name: "Provisioner", Type: "string", Description: "What creates volumes of the class.",
			cell: on(func(sc *api.StorageClass, _ time.Time) string { return sc.Provisioner })},
		{Name: "ReclaimPolicy", Type: "string", Description: "Reclaim policy of provisioned volumes.",
			cell: on(func(sc *api.StorageClass, _ time.Time) string {
				if sc.ReclaimPolicy == nil {
					return string(api.PersistentVolumeReclaimDelete)
				}
				return string(*sc.ReclaimPolicy)
			})},
		{Name: "VolumeBindingMode", Type: "string", Description: "When claims of the class are bound.",
			cell: on(func(sc *api.StorageClass, _ time.Time) string {
				if sc.VolumeBindingMode == nil {
					return string(api.VolumeBindingImmediate)
				}
				return string(*sc.VolumeBindingMode)
			})},
		{Name: "AllowVolumeExpansion", Type: "string", Description: "Whether volumes of the class may grow.",
			cell: on(func(sc *api.StorageClass, _ time.Time) string {
				return strconv.FormatBool(sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion)
			})},
		ageColumn,
	},
	"NetworkPolicy": {
		nameColumn,
		{Name: "Pod-Selector", Type: "string", Description: "The pods of the namespace the policy holds for.",
			cell: on(func(np *api.NetworkPolicy, _ time.Time) string { return FormatSelector(&np.Spec.PodSelector) })},
		ageColumn,
	},
	"Ingress": {
		nameColumn,
		{Name: "Class", Type: "string", Description: "The IngressClass that serves the Ingress.",
			cell: on(func(ing *api.Ingress, _ time.Time) string { return ingressClass(ing) })},
		{Name: "Hosts", Type: "string", Description: "The hosts the rules match, * for any.",
			cell: on(func(ing *api.Ingress, _ time.Time) string { return ingressHosts(ing) })},
		{Name: "Address", Type: "string", Description: "The addresses the Ingress is served on.", Blank: true,
			cell: on(func(ing *api.Ingress, _ time.Time) string { return ingressAddress(ing) })},
		{Name: "Ports", Type: "string", Description: "80, and 443 with TLS.",
			cell: on(func(ing *api.Ingress, _ time.Time) string { return ingressPorts(ing) })},
		ageColumn,
	},
	"IngressClass": {
		nameColumn,
		{Name: "Controller", Type: "string", Description: "The controller that serves the class's Ingresses.",
			cell: on(func(ic *api.IngressClass, _ time.Time) string { return ic.Spec.Controller })},
		{Name: "Parameters", Type: "string", Description: "The object holding the controller's parameters.",
			cell: on(func(ic *api.IngressClass, _ time.Time) string { return ingressClassParameters(ic) })},
		ageColumn,
	},
	"PriorityClass": {
		nameColumn,
		{Name: "Value", Type: "integer", Description: "The priority of the pods of the class.",
			cell: on(func(pc *api.PriorityClass, _ time.Time) string { return strconv.Itoa(int(pc.Value)) })},
		{Name: "Global-Default", Type: "boolean", Description: "Whether pods that name no class get this one's value.",
			cell: on(func(pc *api.PriorityClass, _ time.Time) string { return strconv.FormatBool(pc.GlobalDefault) })},
		ageColumn,
		{Name: "PreemptionPolicy", Type: "string", Description: "Whether the class's pods may preempt pods of lower priority.",
			cell: on(func(pc *api.PriorityClass, _ time.Time) string {
				if pc.PreemptionPolicy == nil {
					return string(api.PreemptLowerPriority)
				}
				return string(*pc.PreemptionPolicy)
			})},
	},
	"Lease": {
		nameColumn,
		{Name: "Holder", Type: "string", Description: "Who holds the lease: for a node's, the node.",
			cell: on(func(l *api.Lease, _ time.Time) string {
				if l.Spec.HolderIdentity == nil {
					return ""
				}
				return *l.Spec.HolderIdentity
			})},
		ageColumn,
	},
	"PodDisruptionBudget": {
		nameColumn,
		{Name: "Min Available", Type: "string", Description: "The minimum number or percentage of available pods this budget requires.",
			cell: on(func(b *api.PodDisruptionBudget, _ time.Time) string { return budgetCount(b.Spec.MinAvailable) })},
		{Name: "Max Unavailable", Type: "string", Description: "The maximum number or percentage of unavailable pods this budget requires.",
			cell: on(func(b *api.PodDisruptionBudget, _ time.Time) string { return budgetCount(b.Spec.MaxUnavailable) })},
		{Name: "Allowed Disruptions", Type: "integer", Description: "Calculated number of pods that may be disrupted at this time.",
			cell: on(func(b *api.PodDisruptionBudget, _ time.Time) string { return intCell(b.Status.DisruptionsAllowed) })},
		ageColumn,
	},
	"Namespace": {
		nameColumn,
		{Name: "Status", Type: "string", Description: "Active or Terminating.",
			cell: on(func(n *api.Namespace, _ time.Time) string { return string(n.Status.Phase) })},
		ageColumn,
	},
	"ConfigMap": {
		nameColumn,
		{Name: "Data", Type: "integer", Description: "Number of keys.",
			cell: on(func(c *api.ConfigMap, _ time.Time) string { return strconv.Itoa(len(c.Data) + len(c.BinaryData)) })},
		ageColumn,
	},
	"Secret": {
		nameColumn,
		{Name: "Type", Type: "string", Description: "The shape of the secret's data.",
			cell: on(func(s *api.Secret, _ time.Time) string { return string(s.Type) })},
		{Name: "Data", Type: "integer", Description: "Number of keys.",
			cell: on(func(s *api.Secret, _ time.Time) string { return strconv.Itoa(secretKeys(s)) })},
		ageColumn,
	},
	"ServiceAccount": {
		nameColumn,
		{Name: "Secrets", Type: "integer", Description: "Number of secrets of the account.",
			cell: on(func(sa *api.ServiceAccount, _ time.Time) string { return strconv.Itoa(len(sa.Secrets)) })},
		ageColumn,
	},
	"LimitRange": {nameColumn, createdAtColumn},
	"ResourceQuota": {
		nameColumn,
		ageColumn,
		{Name: "Request", Type: "string", Description: "Used and hard amounts of everything but limits.",
			cell: on(func(q *api.ResourceQuota, _ time.Time) string { r, _ := quotaColumns(q); return r })},
		{Name: "Limit", Type: "string", Description: "Used and hard amounts of limits.",
			cell: on(func(q *api.ResourceQuota, _ time.Time) string { _, l := quotaColumns(q); return l })},
	},
	"Event": {
		{Name: "Last Seen", Type: "string", Description: "Time since the event last happened.",
			cell: on(func(e *api.Event, now time.Time) string { return Age(eventLastSeen(e), now) })},
		{Name: "Type", Type: "string", Description: "Normal or Warning.",
			cell: on(func(e *api.Event, _ time.Time) string { return e.Type })},
		{Name: "Reason", Type: "string", Description: "Why the event happened, in CamelCase.",
			cell: on(func(e *api.Event, _ time.Time) string { return e.Reason })},
		{Name: "Object", Type: "string", Description: "The object the event is about.",
			cell: on(func(e *api.Event, _ time.Time) string { return EventObject(e) })},
		{Name: "Subobject", Type: "string", Priority: 1, Description: "The part of the object, as a field path.",
			cell: on(func(e *api.Event, _ time.Time) string { return e.InvolvedObject.FieldPath })},
		{Name: "Source", Type: "string", Priority: 1, Description: "The component that recorded the event.",
			cell: on(func(e *api.Event, _ time.Time) string { return EventSource(e.Source) })},
		{Name: "Message", Type: "string", Description: "What happened.",
			cell: on(func(e *api.Event, _ time.Time) string { return strings.TrimSpace(e.Message) })},
		{Name: "First Seen", Type: "string", Priority: 1, Description: "Time since the event first happened.",
			cell: on(func(e *api.Event, now time.Time) string { return Age(e.FirstTimestamp, now) })},
		{Name: "Count", Type: "integer", Priority: 1, Description: "How many times the event happened.",
			cell: on(func(e *api.Event, _ time.Time) string { return intCell(e.Count) })},
		{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: "Name of the event.",
			cell: func(o api.Object, _ time.Time) string { return o.GetName() }},
	},
	"Source": {
		nameColumn,
		{Name: "Type", Type: "string", Description: "git, dir or http.",
			cell: on(func(s *api.Source, _ time.Time) string { return string(s.Spec.Type) })},
		{Name: "Revision", Type: "string", Description: "The revision last applied.",
			cell: on(func(s *api.Source, _ time.Time) string { return ShortRevision(s.Status.LastAppliedRevision) })},
		{Name: "Ready", Type: "string", Description: "Status of the Ready condition.",
			cell: on(func(s *api.Source, _ time.Time) string {
				if c := SourceReady(s); c != nil {
					return string(c.Status)
				}
				return string(api.ConditionUnknown)
			})},
		{Name: "Health", Type: "string", Description: "kstatus of the objects last applied (with spec.wait): Healthy, Progressing or Degraded.",
			cell: on(func(s *api.Source, _ time.Time) string { return s.Status.Health })},
		{Name: "Message", Type: "string", Description: "Message of the Ready condition, on one line, with its first error whole.",
			cell: on(func(s *api.Source, _ time.Time) string { return SourceMessage(s) })},
		{Name: "Objects", Type: "integer", Priority: 1, Description: "Objects the last applied revision holds.",
			cell: on(func(s *api.Source, _ time.Time) string { return intCell(s.Status.Objects) })},
		{Name: "Last Sync", Type: "string", Priority: 1, Description: "Time since the source was last synced.",
			cell: on(func(s *api.Source, now time.Time) string {
				if s.Status.LastSyncTime == nil {
					return ""
				}
				return Age(*s.Status.LastSyncTime, now)
			})},
		{Name: "URL", Type: "string", Priority: 1, Description: "Where the source reads from.",
			cell: on(func(s *api.Source, _ time.Time) string { return s.Spec.URL })},
	},
	"Alert": {
		nameColumn,
		{Name: "Provider", Type: "string", Description: "generic, slack, github, gitlab or gitea.",
			cell: on(func(a *api.Alert, _ time.Time) string { return string(a.Spec.Provider.Type) })},
		{Name: "Sources", Type: "string", Description: "The Sources whose events are sent, and the label selector.",
			cell: on(func(a *api.Alert, _ time.Time) string { return AlertSources(a) })},
		{Name: "Events", Type: "string", Description: "The event types sent; every one when empty.",
			cell: on(func(a *api.Alert, _ time.Time) string {
				ev := strings.Join(a.Spec.Events, ",")
				if a.Spec.Severity == api.AlertSeverityError {
					ev = strings.TrimPrefix(ev+",severity=error", ",")
				}
				return ev
			})},
		{Name: "Sent", Type: "integer", Description: "Events delivered since the server started.",
			cell: on(func(a *api.Alert, _ time.Time) string { return fmt.Sprint(a.Status.Sent) })},
		{Name: "Failed", Type: "integer", Description: "Events given up on after their retries.",
			cell: on(func(a *api.Alert, _ time.Time) string { return fmt.Sprint(a.Status.Failed) })},
		{Name: "Last Sent", Type: "string", Description: "Time since an event was last delivered.",
			cell: on(func(a *api.Alert, now time.Time) string {
				if a.Status.LastSentTime == nil {
					return ""
				}
				return Age(*a.Status.LastSentTime, now)
			})},
		{Name: "Last Error", Type: "string", Priority: 1, Description: "The last failure to deliver.",
			cell: on(func(a *api.Alert, _ time.Time) string { return a.Status.LastError })},
		{Name: "Suspended", Type: "boolean", Priority: 1, Description: "Whether sending is stopped.",
			cell: on(func(a *api.Alert, _ time.Time) string { return fmt.Sprint(a.Spec.Suspend) })},
	},
}

// replicaColumns are the columns ReplicaSets and ReplicationControllers
// share: NAME DESIRED CURRENT READY AGE.
func replicaColumns(desired, current, ready func(api.Object, time.Time) string) []Column {
	return []Column{
		nameColumn,
		{Name: "Desired", Type: "integer", Description: "Replicas wanted.", cell: desired},
		{Name: "Current", Type: "integer", Description: "Replicas created.", cell: current},
		{Name: "Ready", Type: "integer", Description: "Replicas ready.", cell: ready},
		ageColumn,
	}
}

// secretKeys counts a secret's keys, stringData included (the API server
// merges it into data, but a manifest may still hold it).
func secretKeys(s *api.Secret) int {
	n := len(s.Data)
	for k := range s.StringData {
		if _, ok := s.Data[k]; !ok {
			n++
		}
	}
	return n
}

func volumeMode(m *api.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}

// orUnknown shows `<unknown>` where a node has not reported a value, as
// kubectl does.
func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
