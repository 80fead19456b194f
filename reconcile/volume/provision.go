package volume

import (
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// provisionRetry is how soon a claim that could not be provisioned (no
// node, no local-path root yet) is looked at again.
const provisionRetry = 10 * time.Second

// provision makes a local-path volume for claim on node (its selected
// node) or, for an Immediate class, on a node it picks, pre-bound to the
// claim, and binds it. The directory itself is made by the node's agent
// when a pod first uses it: the server cannot reach a node's disk.
func (r *Reconciler) provision(ctx context.Context, claim *api.PersistentVolumeClaim, class *api.StorageClass, node *api.Node) (reconcile.Result, error) {
	if node == nil {
		n, err := r.pickNode(claim, class)
		if err != nil {
			return reconcile.Result{}, err
		}
		if n == nil {
			r.events.Event(claim, api.EventTypeWarning, ReasonProvisioningFailed, "no node can hold a local-path volume")
			return reconcile.Result{RequeueAfter: provisionRetry}, nil
		}
		node = n
	}
	pv, err := LocalPathVolume(claim, class, node)
	if err != nil {
		r.events.Event(claim, api.EventTypeWarning, ReasonProvisioningFailed, err.Error())
		return reconcile.Result{RequeueAfter: provisionRetry}, nil
	}
	created, err := r.store.Create(ctx, pv)
	switch {
	case store.IsAlreadyExists(err):
		// Made by an earlier attempt that did not get to bind it.
		obj, err := r.store.Get(volumeKind, "", pv.Name)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("get volume %s: %w", pv.Name, err)
		}
		created = obj
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("provision volume %s for claim %s/%s: %w", pv.Name, claim.Namespace, claim.Name, err)
	default:
		r.events.Event(claim, api.EventTypeNormal, ReasonProvisioningSucceeded,
			fmt.Sprintf("Successfully provisioned volume %s on node %s", pv.Name, node.Name))
	}
	return reconcile.Result{}, r.bind(ctx, created.(*api.PersistentVolume), claim)
}

// LocalPathVolume is the volume the local-path provisioner makes for claim
// on node: a directory named for the volume under the class's nodePath,
// else under the root the node's agent publishes, with node affinity to
// that node and the class's reclaim policy, pre-bound to the claim.
func LocalPathVolume(claim *api.PersistentVolumeClaim, class *api.StorageClass, node *api.Node) (*api.PersistentVolume, error) {
	root := class.Parameters[api.LocalPathNodePath]
	switch {
	case root != "" && !filepath.IsAbs(root):
		// Validation refuses it now; a class stored before may hold one.
		return nil, fmt.Errorf("class %s: parameters[%s] %q is not an absolute path",
			class.Name, api.LocalPathNodePath, root)
	case root == "":
		root = node.Annotations[api.AnnotationLocalPathRoot]
		if root == "" {
			return nil, fmt.Errorf("node %s publishes no local-path root (annotation %s) and class %s sets no %s",
				node.Name, api.AnnotationLocalPathRoot, class.Name, api.LocalPathNodePath)
		}
		if !filepath.IsAbs(root) {
			return nil, fmt.Errorf("node %s: local-path root %q (annotation %s) is not an absolute path, and class %s sets no %s",
				node.Name, root, api.AnnotationLocalPathRoot, class.Name, api.LocalPathNodePath)
		}
	}
	name := "pvc-" + string(claim.UID)
	policy := api.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		policy = *class.ReclaimPolicy
	}
	mode := api.PersistentVolumeFilesystem
	if claim.Spec.VolumeMode != nil {
		mode = *claim.Spec.VolumeMode
	}
	pv := &api.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{api.AnnotationProvisionedBy: api.LocalPathProvisioner},
		},
		Spec: api.PersistentVolumeSpec{
			Capacity:                      api.ResourceList{api.ResourceStorage: claim.Spec.Resources.Requests[api.ResourceStorage]},
			PersistentVolumeSource:        api.PersistentVolumeSource{Local: &api.LocalVolumeSource{Path: filepath.Join(root, name)}},
			AccessModes:                   slices.Clone(claim.Spec.AccessModes),
			ClaimRef:                      claimRef(claim),
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              class.Name,
			MountOptions:                  slices.Clone(class.MountOptions),
			VolumeMode:                    &mode,
			NodeAffinity:                  hostnameAffinity(node.Name),
		},
	}
	api.Default(pv)
	return pv, nil
}

// pickNode chooses the node of a volume provisioned at once: among the
// Ready, schedulable nodes that can hold one, the claim's UID picks, so
// claims spread over nodes and a retry picks the same node.
func (r *Reconciler) pickNode(claim *api.PersistentVolumeClaim, class *api.StorageClass) (*api.Node, error) {
	objs, _, err := r.store.List(nodeKind, store.Filter{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var nodes []*api.Node
	for _, o := range objs {
		n := o.(*api.Node)
		if n.Spec.Unschedulable || !nodeReady(n) {
			continue
		}
		if class.Parameters[api.LocalPathNodePath] == "" && n.Annotations[api.AnnotationLocalPathRoot] == "" {
			continue
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, nil
	}
	slices.SortFunc(nodes, func(a, b *api.Node) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	h := fnv.New32a()
	h.Write([]byte(claim.UID))
	return nodes[int(h.Sum32()%uint32(len(nodes)))], nil
}

func nodeReady(n *api.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == api.NodeReady {
			return c.Status == api.ConditionTrue
		}
	}
	return false
}
