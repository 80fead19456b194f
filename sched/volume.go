package sched

import "github.com/berth-dev/berth/api"

// VolumeFilter is the hook through which volume binding rejects nodes a
// pod's volumes cannot be used on (a local PersistentVolume's node
// affinity, claims still waiting for a volume). reconcile/volume's Filter
// implements it over the store; with none, no volume constrains placement.
type VolumeFilter interface {
	// ForPod returns the node test for pod's volumes, or nil when none of
	// them constrains where the pod runs. It is called once per scheduling
	// attempt, so it may look claims and volumes up there and keep the
	// per-node test cheap. An error sends the pod to back-off.
	ForPod(pod *api.Pod) (func(node *NodeInfo) *Status, error)
}

// VolumeAssumer is a VolumeFilter that also learns where the scheduler
// placed a pod, before its binding is written, as kube-scheduler's
// VolumeBinding plugin assumes a pod's volumes (AssumePodVolumes): a claim
// that waits for its first consumer is then taken to be on that node for
// the next pods that use it, though nothing in the store says so until
// the volume controller selects the node. Without it, replicas sharing
// such a claim were spread over nodes, and all but one could not start.
type VolumeAssumer interface {
	// AssumePodVolumes records that pod is placed on node. The scheduler
	// calls it as it assumes the pod, before it schedules another.
	AssumePodVolumes(pod *api.Pod, node string)
	// ForgetPodVolumes takes back what AssumePodVolumes recorded for
	// pod: its binding failed.
	ForgetPodVolumes(pod *api.Pod)
}

// StatusVolumeNodeAffinityConflict is what a VolumeFilter returns for a
// node outside a bound volume's node affinity.
var StatusVolumeNodeAffinityConflict = newUnresolvable("VolumeBinding", ReasonVolumeNodeAffinityConflict)

// volumeBinding runs the VolumeFilter's per-pod test: its PreFilter asks
// the hook once per attempt, its Filter runs the answer on each node.
type volumeBinding struct{ hook VolumeFilter }

// volumeKey keeps the attempt's node test, a nodeVolumes.
var volumeKey = NewStateKey("VolumeBinding")

// nodeVolumes is a VolumeFilter's answer for one pod.
type nodeVolumes func(*NodeInfo) *Status

func (volumeBinding) Name() string { return "VolumeBinding" }

func (v volumeBinding) PreFilter(state *CycleState, pod *PodInfo) error {
	if v.hook == nil {
		return nil
	}
	test, err := v.hook.ForPod(pod.Pod)
	if err != nil || test == nil {
		return err
	}
	state.Write(volumeKey, nodeVolumes(test))
	return nil
}

func (volumeBinding) SkipFilter(state *CycleState, _ *PodInfo) bool {
	return state.Read(volumeKey) == nil
}

func (volumeBinding) Filter(state *CycleState, _ *PodInfo, node *NodeInfo) *Status {
	test, _ := state.Read(volumeKey).(nodeVolumes)
	if test == nil {
		return nil
	}
	return test(node)
}
