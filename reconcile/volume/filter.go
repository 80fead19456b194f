package volume

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/store"
)

// Filter is the scheduler's volume hook (sched.VolumeFilter) over the
// store: a pod whose claim is bound to a volume with node affinity fits
// only the nodes that affinity admits; a pod whose claim waits for its
// first consumer fits the nodes where an available volume could be bound
// or a local-path volume provisioned; a pod with a claim that is missing
// or not bound yet, and must bind before its pod is placed, fits no node.
//
// It is also the scheduler's sched.VolumeAssumer: once a pod of a claim
// that waits for its first consumer, with no node selected yet, is
// assumed on a node, the next pods of the claim fit only that node, until
// the store shows the claim's selected node or its volume.
type Filter struct {
	store *store.Store

	mu sync.Mutex
	// assumed are the nodes of waiting claims ("namespace/name") that
	// pods were assumed on.
	assumed map[string]*assumption
}

// assumption is the node a waiting claim was assumed on, and the pods
// assumed there with it: the assumption stands while one of them does.
type assumption struct {
	uid  types.UID
	node string
	pods map[types.UID]bool
}

// NewFilter returns the hook reading s.
func NewFilter(s *store.Store) *Filter {
	return &Filter{store: s, assumed: map[string]*assumption{}}
}

var (
	_ sched.VolumeFilter  = (*Filter)(nil)
	_ sched.VolumeAssumer = (*Filter)(nil)
)

// AssumePodVolumes records node as the node of the pod's claims that wait
// for their first consumer and have none selected yet. It first drops the
// assumptions the store has settled since (see sweep), so that one of a
// claim no later pod looks at does not stay for ever.
func (f *Filter) AssumePodVolumes(pod *api.Pod, node string) {
	var snap *store.Snapshot
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		if snap == nil {
			snap = f.store.Snapshot()
			f.sweep(snap)
		}
		claim, waiting := waitingClaim(snap, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		if !waiting || claim.Annotations[api.AnnotationSelectedNode] != "" {
			continue
		}
		key := reconcile.ObjectKey(claim)
		f.mu.Lock()
		a := f.assumed[key]
		if a == nil || a.uid != claim.UID {
			a = &assumption{uid: claim.UID, node: node, pods: map[types.UID]bool{}}
			f.assumed[key] = a
		}
		a.pods[pod.UID] = true
		f.mu.Unlock()
	}
}

// ForgetPodVolumes takes the pod out of its claims' assumptions, and drops
// those it was the last pod of.
func (f *Filter) ForgetPodVolumes(pod *api.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		key := reconcile.Key(pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		if a := f.assumed[key]; a != nil {
			delete(a.pods, pod.UID)
			if len(a.pods) == 0 {
				delete(f.assumed, key)
			}
		}
	}
}

// assumedNode is the node claim was assumed on, "" for none. An
// assumption of an earlier claim of the same name is dropped.
func (f *Filter) assumedNode(claim *api.PersistentVolumeClaim) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := reconcile.ObjectKey(claim)
	a := f.assumed[key]
	if a == nil {
		return ""
	}
	if a.uid != claim.UID {
		delete(f.assumed, key)
		return ""
	}
	return a.node
}

// settled drops the assumption of a claim the store now places: its node
// is selected, or it is bound.
func (f *Filter) settled(ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.assumed) > 0 {
		delete(f.assumed, reconcile.Key(ns, name))
	}
}

// sweep drops the assumptions of claims snap no longer shows waiting:
// gone, recreated, bound, or with their node selected.
func (f *Filter) sweep(snap *store.Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, a := range f.assumed {
		ns, name := reconcile.SplitKey(key)
		claim, waiting := waitingClaim(snap, ns, name)
		if !waiting || claim.UID != a.uid || claim.Annotations[api.AnnotationSelectedNode] != "" {
			delete(f.assumed, key)
		}
	}
}

// waitingClaim returns the claim if it is unbound, not being deleted, and
// of a class that waits for the first consumer.
func waitingClaim(snap *store.Snapshot, ns, name string) (*api.PersistentVolumeClaim, bool) {
	obj, err := snap.Get(claimKind, ns, name)
	if err != nil {
		return nil, false
	}
	claim := obj.(*api.PersistentVolumeClaim)
	if claim.Spec.VolumeName != "" || claim.DeletionTimestamp != nil {
		return nil, false
	}
	cn := claimClass(claim)
	if cn == "" {
		return nil, false
	}
	o, err := snap.Get(classKind, "", cn)
	if err != nil || bindingMode(o.(*api.StorageClass)) != api.VolumeBindingWaitForFirstConsumer {
		return nil, false
	}
	return claim, true
}

// claimTest is one constraint on the node: a bound volume's affinity, or
// what an unbound claim could get there.
type claimTest struct {
	affinity *api.NodeSelector
	// For a claim waiting for its first consumer: the candidate volumes
	// (all but node affinity checked), and whether the class provisions
	// local-path volumes (on nodes with a root, or anywhere when the class
	// names nodePath).
	waiting     bool
	selected    string
	candidates  []*api.PersistentVolume
	provision   bool
	anyNodeRoot bool
}

// ForPod looks the pod's claims up in one snapshot and returns the per-node
// test, nil if no claim constrains placement.
func (f *Filter) ForPod(pod *api.Pod) (func(node *sched.NodeInfo) *sched.Status, error) {
	var tests []claimTest
	var snap *store.Snapshot
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		if snap == nil {
			snap = f.store.Snapshot()
		}
		t, err := f.claimTest(snap, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		if err != nil {
			return nil, err
		}
		if t != nil {
			tests = append(tests, *t)
		}
	}
	if len(tests) == 0 {
		return nil, nil
	}
	return func(node *sched.NodeInfo) *sched.Status {
		n := node.Node()
		if n == nil {
			return nil
		}
		for i := range tests {
			if st := tests[i].check(n); st != nil {
				return st
			}
		}
		return nil
	}, nil
}

func (t *claimTest) check(n *api.Node) *sched.Status {
	if !t.waiting {
		if !sched.NodeSelectorMatches(t.affinity, n.Name, n.Labels) {
			return sched.StatusVolumeNodeAffinityConflict
		}
		return nil
	}
	if t.selected != "" && t.selected != n.Name {
		// Its volume is being made on the node chosen before.
		return sched.StatusVolumeBindConflict
	}
	if t.provision && (t.anyNodeRoot || n.Annotations[api.AnnotationLocalPathRoot] != "") {
		return nil
	}
	for _, pv := range t.candidates {
		if pv.Spec.NodeAffinity == nil || sched.NodeSelectorMatches(pv.Spec.NodeAffinity.Required, n.Name, n.Labels) {
			return nil
		}
	}
	return sched.StatusVolumeBindConflict
}

// claimTest builds the test of one claim, nil when it constrains nothing.
func (f *Filter) claimTest(snap *store.Snapshot, ns, name string) (*claimTest, error) {
	obj, err := snap.Get(claimKind, ns, name)
	if store.IsNotFound(err) {
		return nil, &sched.PodUnschedulableError{Message: fmt.Sprintf("persistentvolumeclaim %q not found", name)}
	}
	if err != nil {
		return nil, fmt.Errorf("get claim %s/%s: %w", ns, name, err)
	}
	claim := obj.(*api.PersistentVolumeClaim)
	if claim.DeletionTimestamp != nil {
		return nil, &sched.PodUnschedulableError{Message: fmt.Sprintf("persistentvolumeclaim %q is being deleted", name)}
	}
	if claim.Spec.VolumeName != "" {
		f.settled(ns, name)
		o, err := snap.Get(volumeKind, "", claim.Spec.VolumeName)
		if store.IsNotFound(err) {
			return nil, &sched.PodUnschedulableError{Message: "pvc(s) bound to non-existent pv(s)"}
		}
		if err != nil {
			return nil, fmt.Errorf("get volume %s: %w", claim.Spec.VolumeName, err)
		}
		pv := o.(*api.PersistentVolume)
		if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			return nil, nil
		}
		return &claimTest{affinity: pv.Spec.NodeAffinity.Required}, nil
	}
	var class *api.StorageClass
	if cn := claimClass(claim); cn != "" {
		o, err := snap.Get(classKind, "", cn)
		if err != nil && !store.IsNotFound(err) {
			return nil, fmt.Errorf("get storageclass %s: %w", cn, err)
		}
		if err == nil {
			class = o.(*api.StorageClass)
		}
	}
	if class == nil || bindingMode(class) != api.VolumeBindingWaitForFirstConsumer {
		return nil, &sched.PodUnschedulableError{Message: sched.ReasonUnboundImmediateClaims}
	}
	t := &claimTest{waiting: true, selected: claim.Annotations[api.AnnotationSelectedNode]}
	if t.selected != "" {
		f.settled(ns, name)
	} else {
		// A pod of the claim placed before, whose node the volume
		// controller has not recorded yet.
		t.selected = f.assumedNode(claim)
	}
	if class.Provisioner == api.LocalPathProvisioner {
		t.provision = true
		t.anyNodeRoot = class.Parameters[api.LocalPathNodePath] != ""
	}
	req, err := NewRequest(claim, nil)
	if err != nil {
		return nil, &sched.PodUnschedulableError{Message: err.Error()}
	}
	err = snap.Each(volumeKind, store.Filter{}, func(o api.Object) bool {
		pv := o.(*api.PersistentVolume)
		if pv.Spec.ClaimRef != nil {
			ref := pv.Spec.ClaimRef
			if ref.Namespace != ns || ref.Name != name || (ref.UID != "" && ref.UID != string(claim.UID)) {
				return true
			}
		} else if !Available(pv) {
			return true
		}
		if req.Mismatch(pv) == "" {
			t.candidates = append(t.candidates, pv)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	return t, nil
}
