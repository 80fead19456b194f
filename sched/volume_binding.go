package sched

// Reasons of the volume filter beyond a bound volume's node affinity,
// spelled as kube-scheduler's VolumeBinding plugin spells them.
const (
	// ReasonVolumeBindConflict: a claim waiting for its first consumer
	// could neither bind an available volume nor be provisioned there.
	ReasonVolumeBindConflict = "node(s) didn't find available persistent volumes to bind"
	// ReasonUnboundImmediateClaims: a claim the pod uses must bind before
	// the pod is placed, and has not.
	ReasonUnboundImmediateClaims = "pod has unbound immediate PersistentVolumeClaims"
)

// StatusVolumeBindConflict is what a VolumeFilter returns for a node where
// an unbound claim of the pod cannot get a volume.
var StatusVolumeBindConflict = newUnresolvable("VolumeBinding", ReasonVolumeBindConflict)

// PodUnschedulableError is returned by a VolumeFilter's ForPod when no
// node can take the pod whatever the node (a claim that is not bound yet,
// or missing): kube-scheduler's PreFilter rejection. The scheduler reports
// it as "0/N nodes are available: <Message>." and retries the pod like
// any unschedulable one, instead of treating it as an error.
type PodUnschedulableError struct {
	Message string
}

func (e *PodUnschedulableError) Error() string { return e.Message }

// VolumesChanged tells the scheduler that claims or volumes changed (a
// claim bound, a volume appeared), so that pods that waited for them are
// tried again now rather than at the next periodic flush. The volume
// controller calls it; it is safe to call at any time.
func (s *Scheduler) VolumesChanged() { s.queue.moveAll() }
