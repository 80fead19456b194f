package auth

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// The node rules mirror Kubernetes' node authorizer and NodeRestriction
// admission: a node's credential reaches only what running its own pods
// needs, so a compromised node cannot read other nodes' secrets or steer
// other nodes' pods.

// Field selectors the node rules look for.
const (
	nodeRuleFieldNodeName = "spec.nodeName"
	nodeRuleFieldName     = "metadata.name"
)

// Subresources the node rules know.
const (
	SubresourceStatus = "status"
	SubresourceLog    = "log"
	SubresourceToken  = "token"
	// SubresourceEviction is pods/eviction, which kubectl drain posts.
	SubresourceEviction = "eviction"
)

func (p *Policy) authorizeNode(id *Identity, a Attributes) error {
	switch a.Kind.GroupResource().String() {
	case "nodes":
		return p.nodeRuleNode(id, a)
	case "pods":
		return p.nodeRulePod(id, a)
	case "persistentvolumes":
		if ok, err := p.nodeRuleReclaim(id, a); ok || err != nil {
			return err
		}
		return p.nodeRuleReferenced(id, a)
	case "configmaps", "secrets", "persistentvolumeclaims", "serviceaccounts":
		return p.nodeRuleReferenced(id, a)
	case "events":
		return p.nodeRuleEvent(id, a)
	case "leases.coordination.k8s.io":
		return nodeRuleLease(id, a)
	case "services", "endpointslices.discovery.k8s.io", "namespaces", "networkpolicies.networking.k8s.io":
		return nodeRuleProxy(id, a)
	}
	return Forbidden(id, a, "")
}

// nodeRuleProxy: the node's service proxy reads Services, their
// EndpointSlices, Namespaces and NetworkPolicies, as kube-proxy and a
// NetworkPolicy agent do with the node-proxier's rights; nothing of
// them is written, and no subresource is read.
func nodeRuleProxy(id *Identity, a Attributes) error {
	if a.Subresource != "" || !isRead(a.Verb) {
		return Forbidden(id, a, "")
	}
	return nil
}

// nodeRuleLease: a node reads and writes its own Lease in kube-node-lease
// (its heartbeat) and no other; it neither lists nor watches leases.
func nodeRuleLease(id *Identity, a Attributes) error {
	if a.Subresource != "" || a.Verb == VerbList || a.Verb == VerbWatch {
		return Forbidden(id, a, "")
	}
	name := a.Name
	if name == "" && a.Object != nil {
		name = a.Object.GetName()
	}
	if a.Namespace != api.NamespaceNodeLease || name != id.Node || (a.Object != nil && a.Object.GetName() != id.Node) {
		return Forbidden(id, a, fmt.Sprintf("node %q may only use its own Lease in namespace %s", id.Node, api.NamespaceNodeLease))
	}
	return nil
}

// nodeRuleNode: a node reads every Node (as the kubelet does, for topology)
// but writes only its own, and of that, as Kubernetes' NodeRestriction
// has it, sets its taints only when it creates it and never a label
// api.NodeMaySetLabel refuses: a node that could drop its taints or give
// itself a role or a node-restriction.kubernetes.io/ label would steer
// workloads meant for other nodes to itself.
func (p *Policy) nodeRuleNode(id *Identity, a Attributes) error {
	if a.Subresource != "" && a.Subresource != SubresourceStatus {
		return Forbidden(id, a, "")
	}
	if isRead(a.Verb) {
		return nil
	}
	name := a.Name
	if name == "" && a.Object != nil {
		name = a.Object.GetName()
	}
	if name != id.Node || (a.Object != nil && a.Object.GetName() != id.Node) {
		return Forbidden(id, a, fmt.Sprintf("node %q may only change its own Node object", id.Node))
	}
	node, _ := a.Object.(*api.Node)
	if node == nil || a.Subresource != "" {
		// A status write keeps the stored metadata and spec.
		return nil
	}
	var old *api.Node
	if a.Verb != VerbCreate {
		stored, err := p.stored(a)
		if err != nil {
			return err
		}
		if old, _ = stored.(*api.Node); old == nil {
			return nil // 404 follows
		}
		if !equality.Semantic.DeepEqual(old.Spec.Taints, node.Spec.Taints) {
			return Forbidden(id, a, fmt.Sprintf("node %q is not allowed to modify taints", id.Node))
		}
	}
	var oldLabels map[string]string
	if old != nil {
		oldLabels = old.Labels
	}
	if bad := forbiddenNodeLabels(oldLabels, node.Labels); len(bad) > 0 {
		return Forbidden(id, a, fmt.Sprintf("node %q is not allowed to set, modify or remove the labels %s", id.Node, strings.Join(bad, ", ")))
	}
	return nil
}

// forbiddenNodeLabels lists, sorted, the labels that differ between old
// and next that a node may not set.
func forbiddenNodeLabels(old, next map[string]string) []string {
	var bad []string
	for k, v := range next {
		if ov, ok := old[k]; (!ok || ov != v) && !api.NodeMaySetLabel(k) {
			bad = append(bad, k)
		}
	}
	for k := range old {
		if _, ok := next[k]; !ok && !api.NodeMaySetLabel(k) {
			bad = append(bad, k)
		}
	}
	slices.Sort(bad)
	return bad
}

// nodeRulePod: a node reads the pods bound to it, lists and watches them
// only through the spec.nodeName field selector, writes their status,
// deletes them once they are done, and creates its own mirror pods, which
// it never changes (a static pod's new spec is a new mirror pod), as
// Kubernetes' NodeRestriction has it.
func (p *Policy) nodeRulePod(id *Identity, a Attributes) error {
	if a.Subresource == SubresourceEviction {
		return p.nodeRuleEviction(id, a)
	}
	if a.Subresource != "" && a.Subresource != SubresourceStatus {
		return Forbidden(id, a, "")
	}
	switch a.Verb {
	case VerbList, VerbWatch:
		// Every pod, as Kubernetes' node authorizer lets a kubelet read
		// them: the service proxy enforces NetworkPolicy, whose peers
		// are pods of any node, by their addresses and labels.
		if a.Subresource == "" {
			return nil
		}
		if a.FieldSelector != nil {
			if v, ok := a.FieldSelector.RequiresExactMatch(nodeRuleFieldNodeName); ok && v == id.Node {
				return nil
			}
		}
		return Forbidden(id, a, fmt.Sprintf("node %q may only %s pods with fieldSelector %s=%s", id.Node, a.Verb, nodeRuleFieldNodeName, id.Node))
	case VerbCreate:
		if a.Subresource == "" && isMirrorPodOf(a.Object, id.Node) {
			return p.nodeRuleMirrorPod(id, a)
		}
		return Forbidden(id, a, fmt.Sprintf("node %q may only create mirror pods bound to itself", id.Node))
	case VerbGet, VerbDelete:
		old, err := p.stored(a)
		if err != nil {
			return err
		}
		if old == nil || podBoundTo(old, id.Node) {
			return nil
		}
		return Forbidden(id, a, fmt.Sprintf("pod is not bound to node %q", id.Node))
	case VerbUpdate, VerbPatch:
		if a.Subresource == "" {
			return Forbidden(id, a, fmt.Sprintf("node %q may only create and delete mirror pods and write the status of pods bound to it", id.Node))
		}
		old, err := p.stored(a)
		if err != nil {
			return err
		}
		if (old == nil || podBoundTo(old, id.Node)) && (a.Object == nil || podBoundTo(a.Object, id.Node)) {
			return nil
		}
		return Forbidden(id, a, fmt.Sprintf("node %q may only %s pods bound to it", id.Node, a.Verb))
	}
	return Forbidden(id, a, "")
}

// nodeRuleMirrorPod: a mirror pod a node creates is owned by its Node
// alone (one controller reference with the Node's uid, not blocking its
// deletion) and refers to no other object (api.StaticPodReferences), as
// Kubernetes' NodeRestriction has it: the node chooses the mirror pod's
// namespace, and a reference would open that namespace's Secrets,
// ConfigMaps, claims or service-account tokens to it.
func (p *Policy) nodeRuleMirrorPod(id *Identity, a Attributes) error {
	pod, ok := a.Object.(*api.Pod)
	if !ok {
		return Forbidden(id, a, "")
	}
	if refs := api.StaticPodReferences(&pod.Spec); len(refs) > 0 {
		return Forbidden(id, a, fmt.Sprintf("node %q can not create mirror pods that reference other objects: %s", id.Node, strings.Join(refs, "; ")))
	}
	if len(pod.OwnerReferences) != 1 {
		return Forbidden(id, a, fmt.Sprintf("node %q can only create mirror pods with a single owner reference set to itself", id.Node))
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != "v1" || owner.Kind != "Node" || owner.Name != id.Node {
		return Forbidden(id, a, fmt.Sprintf("node %q can only create mirror pods with an owner reference set to itself", id.Node))
	}
	if owner.Controller == nil || !*owner.Controller {
		return Forbidden(id, a, fmt.Sprintf("node %q can only create mirror pods with a controller owner reference set to itself", id.Node))
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return Forbidden(id, a, fmt.Sprintf("node %q must not set blockOwnerDeletion on an owner reference", id.Node))
	}
	if p.store == nil {
		return Forbidden(id, a, "no store to check the owner reference against")
	}
	node, err := p.store.Get(authNodeKind, "", id.Node)
	if store.IsNotFound(err) {
		return Forbidden(id, a, fmt.Sprintf("node %q does not exist", id.Node))
	}
	if err != nil {
		return fmt.Errorf("authorize: %w", err)
	}
	if node.GetUID() != owner.UID {
		return Forbidden(id, a, fmt.Sprintf("node %s uid mismatch: the owner reference names %q, the node is %q", id.Node, owner.UID, node.GetUID()))
	}
	return nil
}

// nodeRuleEviction: Kubernetes' node role may create pods/eviction, and
// its NodeRestriction admission limits that to the pods bound to the
// node: so a node evicts its own pods, within their budgets, and no
// other's. An eviction of a pod that does not exist passes, to be
// answered 404.
func (p *Policy) nodeRuleEviction(id *Identity, a Attributes) error {
	if a.Verb != VerbCreate {
		return Forbidden(id, a, "")
	}
	old, err := p.stored(a)
	if err != nil {
		return err
	}
	if old == nil || podBoundTo(old, id.Node) {
		return nil
	}
	return Forbidden(id, a, fmt.Sprintf("node %s can only evict pods with spec.nodeName set to itself", id.Node))
}

// nodeRuleReferenced: a node reads a ConfigMap, Secret, claim, volume or
// service account only while a pod bound to it references it, and asks
// for tokens only of service accounts its pods run as.
func (p *Policy) nodeRuleReferenced(id *Identity, a Attributes) error {
	name := a.Name
	switch {
	case a.Verb == VerbGet && a.Subresource == "":
	case (a.Verb == VerbList || a.Verb == VerbWatch) && a.Subresource == "":
		// The kubelet watches one object at a time through a name selector.
		v, ok := "", false
		if a.FieldSelector != nil {
			v, ok = a.FieldSelector.RequiresExactMatch(nodeRuleFieldName)
		}
		if !ok || (name != "" && v != name) {
			return Forbidden(id, a, fmt.Sprintf("node %q may only %s %s with fieldSelector %s=<name>", id.Node, a.Verb, a.Kind.Resource, nodeRuleFieldName))
		}
		name = v
	case a.Verb == VerbCreate && a.Subresource == SubresourceToken && a.Kind.Resource == "serviceaccounts":
	default:
		return Forbidden(id, a, "")
	}
	if name == "" || (a.Kind.Namespaced && a.Namespace == "") {
		return Forbidden(id, a, "")
	}
	ok, err := p.referencedByNodePods(id.Node, a.Kind, a.Namespace, name)
	if err != nil {
		return err
	}
	if !ok {
		return Forbidden(id, a, fmt.Sprintf("no relationship found between node %q and this object", id.Node))
	}
	return nil
}

// nodeRuleReclaim: a node follows the volumes the volume controller
// labelled for it to reclaim (list and watch only through the label
// selector api.LabelReclaimNode=<node>), and, of those, changes only
// metadata that says it is done: annotations and finalizers, never the
// spec or the labels, so it cannot take a volume or hand it to another
// node.
func (p *Policy) nodeRuleReclaim(id *Identity, a Attributes) (bool, error) {
	mine := func(o api.Object) bool {
		return o != nil && o.GetLabels()[api.LabelReclaimNode] == id.Node
	}
	switch a.Verb {
	case VerbList, VerbWatch:
		if a.LabelSelector == nil || a.Subresource != "" {
			return false, nil
		}
		v, ok := a.LabelSelector.RequiresExactMatch(api.LabelReclaimNode)
		return ok && v == id.Node, nil
	case VerbUpdate, VerbPatch:
		if a.Subresource != "" || !mine(a.Object) {
			return false, nil
		}
		stored, err := p.stored(a)
		if err != nil || !mine(stored) {
			return false, err
		}
		old, ok1 := stored.(*api.PersistentVolume)
		pv, ok2 := a.Object.(*api.PersistentVolume)
		return ok1 && ok2 && equality.Semantic.DeepEqual(old.Spec, pv.Spec) &&
			maps.Equal(old.Labels, pv.Labels), nil
	}
	return false, nil
}

// nodeRuleEvent: a node records events, and updates (to count repeats)
// only the ones it recorded.
func (p *Policy) nodeRuleEvent(id *Identity, a Attributes) error {
	switch a.Verb {
	case VerbCreate:
		return nil
	case VerbUpdate, VerbPatch:
		old, err := p.stored(a)
		if err != nil {
			return err
		}
		if ev, ok := old.(*api.Event); old == nil || (ok && ev.Source.Host == id.Node) {
			return nil
		}
		return Forbidden(id, a, fmt.Sprintf("node %q may only change events it recorded", id.Node))
	}
	return Forbidden(id, a, "")
}

// stored returns the object a request is about: Attributes.Old, or, when
// the caller did not fill it, the store's copy, so that a missing Old never
// widens what a node may do. It returns nil when the object does not exist
// (the request then fails with 404 on its own).
func (p *Policy) stored(a Attributes) (api.Object, error) {
	if a.Old != nil {
		return a.Old, nil
	}
	if a.Name == "" || p.store == nil {
		return nil, nil
	}
	obj, err := p.store.Get(a.Kind, a.Namespace, a.Name)
	if store.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("authorize: %w", err)
	}
	return obj, nil
}

// referencedByNodePods reports whether a pod bound to node references the
// object, through its volumes, environment or service account, or, for a
// PersistentVolume, through a claim it mounts that is bound to it. Mirror
// pods count for nothing: the node wrote them, in a namespace of its
// choosing, and they run nothing the control plane gave it (a mirror pod
// stored before nodeRuleMirrorPod held, naming a Secret, opens nothing).
func (p *Policy) referencedByNodePods(node string, k *api.Kind, namespace, name string) (bool, error) {
	if p.store == nil {
		return false, nil
	}
	snap := p.store.Snapshot()
	found := false
	var lookupErr error
	err := snap.Each(authPodKind, store.Filter{Index: store.IndexNode, Value: node}, func(o api.Object) bool {
		pod, ok := o.(*api.Pod)
		if !ok || IsMirrorPod(pod) {
			return true
		}
		if k.Resource == "persistentvolumes" {
			for _, claim := range podClaimNames(pod) {
				obj, err := snap.Get(authPVCKind, pod.Namespace, claim)
				if store.IsNotFound(err) {
					continue
				}
				if err != nil {
					lookupErr = err
					return false
				}
				if pvc, ok := obj.(*api.PersistentVolumeClaim); ok && pvc.Spec.VolumeName == name {
					found = true
					return false
				}
			}
			return true
		}
		if pod.Namespace != namespace {
			return true
		}
		found = podReferences(pod, k.Resource, name)
		return !found
	})
	if err == nil {
		err = lookupErr
	}
	if err != nil {
		return false, fmt.Errorf("authorize: %w", err)
	}
	return found, nil
}

var (
	authPVCKind  = api.KindOf(&api.PersistentVolumeClaim{})
	authNodeKind = api.KindOf(&api.Node{})
)

// podReferences reports whether pod names an object of the resource.
func podReferences(pod *api.Pod, resource, name string) bool {
	switch resource {
	case "serviceaccounts":
		return saNameOfPod(pod) == name
	case "persistentvolumeclaims":
		return slices.Contains(podClaimNames(pod), name)
	}
	for _, v := range pod.Spec.Volumes {
		if resource == "configmaps" && v.ConfigMap != nil && v.ConfigMap.Name == name ||
			resource == "secrets" && v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for _, e := range c.EnvFrom {
			if resource == "configmaps" && e.ConfigMapRef != nil && e.ConfigMapRef.Name == name ||
				resource == "secrets" && e.SecretRef != nil && e.SecretRef.Name == name {
				return true
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if resource == "configmaps" && e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name == name ||
				resource == "secrets" && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == name {
				return true
			}
		}
	}
	return false
}

func podClaimNames(pod *api.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// podBoundTo reports whether obj is a pod bound to node.
func podBoundTo(obj api.Object, node string) bool {
	pod, ok := obj.(*api.Pod)
	return ok && node != "" && pod.Spec.NodeName == node
}

// isMirrorPodOf reports whether obj is a mirror pod bound to node.
func isMirrorPodOf(obj api.Object, node string) bool {
	return podBoundTo(obj, node) && IsMirrorPod(obj)
}

// IsMirrorPod reports whether obj is a mirror pod: the read-only copy an
// agent posts of a static pod, marked with api.AnnotationMirror.
func IsMirrorPod(obj api.Object) bool {
	if obj == nil {
		return false
	}
	_, ok := obj.GetAnnotations()[api.AnnotationMirror]
	return ok
}

// MirrorPodGuard is an admission check for pods: a mirror pod mirrors a
// static pod on its node, so only that node may create or change it, and
// no one, not even the admin, may turn a pod into a mirror pod of another
// node. Deletion stays open to whoever may delete the pod, as in
// Kubernetes: the agent posts the mirror pod again while the static pod
// runs, and the node lifecycle controller must clean up after dead nodes.
// Old must be set for update and patch.
func MirrorPodGuard(ctx context.Context, id *Identity, a Attributes) error {
	if a.Kind == nil || a.Kind.GroupResource().String() != "pods" {
		return nil
	}
	if a.Verb != VerbCreate && a.Verb != VerbUpdate && a.Verb != VerbPatch {
		return nil
	}
	for _, o := range []api.Object{a.Old, a.Object} {
		if !IsMirrorPod(o) {
			continue
		}
		pod, _ := o.(*api.Pod)
		node := ""
		if pod != nil {
			node = pod.Spec.NodeName
		}
		if node == "" || id == nil || id.Kind != IdentityNode || id.Node != node {
			return Forbidden(id, a, fmt.Sprintf("mirror pods are read-only: only node %q may %s them", node, a.Verb))
		}
	}
	return nil
}
