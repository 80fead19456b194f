package volume

import (
	"fmt"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/store"
)

// Filter is the scheduler's volume hook (sched.VolumeFilter) over the
// store: a pod whose claim is bound to a volume with node affinity fits
// only the nodes that affinity admits; a pod whose claim waits for its
// first consumer fits the nodes where an available volume could be bound
// or a local-path volume provisioned; a pod with a claim that is missing
// or not bound yet, and must bind before its pod is placed, fits no node.
type Filter struct {
	store *store.Store
}

// NewFilter returns the hook reading s.
func NewFilter(s *store.Store) *Filter { return &Filter{store: s} }

var _ sched.VolumeFilter = (*Filter)(nil)

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
