package volume

import (
	"context"
	"fmt"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Event reasons, Kubernetes' where it has one.
const (
	ReasonFailedBinding         = "FailedBinding"
	ReasonWaitForFirstConsumer  = "WaitForFirstConsumer"
	ReasonProvisioningSucceeded = "ProvisioningSucceeded"
	ReasonProvisioningFailed    = "ProvisioningFailed"
	ReasonExternalProvisioning  = "ExternalProvisioning"
	ReasonClaimLost             = "ClaimLost"
	ReasonVolumeFailedDelete    = "VolumeFailedDelete"
	ReasonVolumeFailedRecycle   = "VolumeFailedRecycle"
	ReasonVolumeRecycled        = "VolumeRecycled"
	ReasonVolumeResizeFailed    = "VolumeResizeFailed"
	ReasonVolumeResizeSuccess   = "VolumeResizeSuccessful"
)

// Messages users see on a claim that waits.
const (
	msgNoVolumeNoClass = "no persistent volumes available for this claim and no storage class is set"
	msgWaitConsumer    = "waiting for first consumer to be created before binding"
)

// annBindCompleted marks a claim whose binding the controller finished.
const annBindCompleted = "pv.kubernetes.io/bind-completed"

// maxBindAttempts bounds how often one reconcile retries a claim against
// volumes that a concurrent write took first.
const maxBindAttempts = 5

// syncClaim converges one claim: bound claims are checked against their
// volume; unbound ones get a pre-bound volume, the smallest available
// one that fits, or a provisioned one.
func (r *Reconciler) syncClaim(ctx context.Context, ns, name string) (reconcile.Result, error) {
	obj, err := r.store.Get(claimKind, ns, name)
	if store.IsNotFound(err) {
		// Its volumes are released: let them see it.
		pvs, _, err := r.store.List(volumeKind, store.Filter{Index: store.IndexClaim, Value: reconcile.Key(ns, name)})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("list volumes of claim %s/%s: %w", ns, name, err)
		}
		for _, pv := range pvs {
			r.enqueue(prefixVolume + pv.GetName())
		}
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get claim %s/%s: %w", ns, name, err)
	}
	claim := obj.(*api.PersistentVolumeClaim)
	if claim.Spec.VolumeName != "" {
		return reconcile.Result{}, r.syncNamedClaim(ctx, claim)
	}
	return r.syncUnboundClaim(ctx, claim)
}

// syncNamedClaim handles a claim that names its volume: it completes or
// checks the binding, and marks the claim Lost when its volume is gone or
// went to another claim.
func (r *Reconciler) syncNamedClaim(ctx context.Context, claim *api.PersistentVolumeClaim) error {
	obj, err := r.store.Get(volumeKind, "", claim.Spec.VolumeName)
	if err != nil && !store.IsNotFound(err) {
		return fmt.Errorf("get volume %s: %w", claim.Spec.VolumeName, err)
	}
	if store.IsNotFound(err) {
		if claim.Status.Phase == api.ClaimBound || claim.Status.Phase == api.ClaimLost {
			return r.lose(ctx, claim, fmt.Sprintf("Bound claim has lost reference to PersistentVolume %s. Data on the volume is lost!", claim.Spec.VolumeName))
		}
		r.events.Event(claim, api.EventTypeWarning, ReasonFailedBinding, fmt.Sprintf("volume %q requested by the claim does not exist", claim.Spec.VolumeName))
		return nil
	}
	pv := obj.(*api.PersistentVolume)
	ref := pv.Spec.ClaimRef
	switch {
	case ref == nil:
		if claim.Status.Phase != api.ClaimBound {
			req, err := NewRequest(claim, nil)
			if err != nil {
				return reconcile.Terminal(err)
			}
			if why := req.Mismatch(pv); why != "" || !Available(pv) {
				if why == "" {
					why = "it is " + string(pv.Status.Phase)
				}
				r.events.Event(claim, api.EventTypeWarning, ReasonFailedBinding, fmt.Sprintf("cannot bind to requested volume %q: %s", pv.Name, why))
				return nil
			}
		}
		// A claim bound by name, or whose volume lost its claimRef: bind
		// the volume to it again.
		return r.bind(ctx, pv, claim)
	case ref.Namespace == claim.Namespace && ref.Name == claim.Name && (ref.UID == "" || ref.UID == string(claim.UID)):
		if bound(pv, claim) {
			return r.expand(ctx, pv, claim)
		}
		return r.bind(ctx, pv, claim)
	}
	if claim.Status.Phase == api.ClaimBound || claim.Status.Phase == api.ClaimLost {
		return r.lose(ctx, claim, fmt.Sprintf("Two claims are bound to the same volume, this one is bound incorrectly to %s", pv.Name))
	}
	r.events.Event(claim, api.EventTypeWarning, ReasonFailedBinding, fmt.Sprintf("volume %q already bound to a different claim", pv.Name))
	return nil
}

// lose marks a claim Lost.
func (r *Reconciler) lose(ctx context.Context, claim *api.PersistentVolumeClaim, msg string) error {
	if claim.Status.Phase == api.ClaimLost {
		return nil
	}
	c := claim.DeepCopy()
	c.Status.Phase = api.ClaimLost
	if _, err := r.store.Update(ctx, c); err != nil {
		return fmt.Errorf("mark claim %s/%s lost: %w", c.Namespace, c.Name, err)
	}
	r.events.Event(c, api.EventTypeWarning, ReasonClaimLost, msg)
	return nil
}

// syncUnboundClaim finds a volume for a claim that names none.
func (r *Reconciler) syncUnboundClaim(ctx context.Context, claim *api.PersistentVolumeClaim) (reconcile.Result, error) {
	// A volume pre-bound to the claim, or one bound in a first step
	// before a crash, comes first.
	pre, _, err := r.store.List(volumeKind, store.Filter{Index: store.IndexClaim, Value: reconcile.ObjectKey(claim)})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("list volumes of claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	var node *api.Node
	class, err := r.class(claimClass(claim))
	if err != nil {
		return reconcile.Result{}, err
	}
	if class != nil && bindingMode(class) == api.VolumeBindingWaitForFirstConsumer {
		var wait bool
		if node, claim, wait, err = r.selectedNode(ctx, claim); err != nil || wait {
			return reconcile.Result{}, err
		}
	}
	req, err := NewRequest(claim, node)
	if err != nil {
		r.events.Event(claim, api.EventTypeWarning, ReasonFailedBinding, err.Error())
		return reconcile.Result{}, reconcile.Terminal(err)
	}
	for _, o := range pre {
		pv := o.(*api.PersistentVolume)
		if ref := pv.Spec.ClaimRef; ref.UID != "" && ref.UID != string(claim.UID) {
			continue // bound to an earlier claim of the same name
		}
		if why := req.Mismatch(pv); why != "" {
			r.events.Event(claim, api.EventTypeWarning, ReasonFailedBinding, fmt.Sprintf("volume %q is pre-bound to this claim but does not fit it: %s", pv.Name, why))
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, r.bind(ctx, pv, claim)
	}
	for range maxBindAttempts {
		pv, err := r.take(req)
		if err != nil {
			return reconcile.Result{}, err
		}
		if pv == nil {
			break
		}
		err = r.bind(ctx, pv, claim)
		if err == nil {
			return reconcile.Result{}, nil
		}
		if !store.IsConflict(err) && !store.IsNotFound(err) {
			r.restore(pv.Name)
			return reconcile.Result{}, err
		}
		// The index was behind the store: learn the volume's state and
		// look again.
		r.restore(pv.Name)
		if cur, err := r.store.Get(claimKind, claim.Namespace, claim.Name); err != nil || cur.GetResourceVersion() != claim.ResourceVersion {
			// The claim changed under us: its own event brings it back.
			return reconcile.Result{}, nil
		}
	}
	switch {
	case class == nil:
		r.events.Event(claim, api.EventTypeNormal, ReasonFailedBinding, msgNoVolumeNoClass)
		return reconcile.Result{}, nil
	case class.Provisioner == api.LocalPathProvisioner:
		return r.provision(ctx, claim, class, node)
	}
	r.events.Event(claim, api.EventTypeNormal, ReasonExternalProvisioning,
		fmt.Sprintf("waiting for a volume to be created by the external provisioner %q", class.Provisioner))
	return reconcile.Result{}, nil
}

// take returns the volume of the index that best fits req, removed from
// the index so that a concurrent worker does not take it too; nil when
// none fits.
func (r *Reconciler) take(req *Request) (*api.PersistentVolume, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.loadIndex(); err != nil {
		return nil, err
	}
	pv := r.index.Match(req)
	if pv != nil {
		r.index.Remove(pv.Name)
	}
	return pv, nil
}

// restore puts the store's state of a volume the binder took back into
// the index.
func (r *Reconciler) restore(name string) {
	obj, err := r.store.Get(volumeKind, "", name)
	if err != nil {
		return
	}
	pv := obj.(*api.PersistentVolume)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.index.Set(pv)
}

// class returns the named StorageClass, nil for "" or a class that does
// not exist (the claim then waits like one without a class).
func (r *Reconciler) class(name string) (*api.StorageClass, error) {
	if name == "" {
		return nil, nil
	}
	obj, err := r.store.Get(classKind, "", name)
	if store.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get storageclass %s: %w", name, err)
	}
	return obj.(*api.StorageClass), nil
}

func bindingMode(c *api.StorageClass) api.VolumeBindingMode {
	if c.VolumeBindingMode == nil {
		return api.VolumeBindingImmediate
	}
	return *c.VolumeBindingMode
}

// selectedNode returns the node chosen for a claim that waits for its
// first consumer: the claim's selected-node annotation, else the node of
// a pod using it, which it then records (returning the claim as written).
// wait says there is none yet.
func (r *Reconciler) selectedNode(ctx context.Context, claim *api.PersistentVolumeClaim) (*api.Node, *api.PersistentVolumeClaim, bool, error) {
	name := claim.Annotations[api.AnnotationSelectedNode]
	if name == "" {
		pods, _, err := r.store.List(podKind, store.Filter{Namespace: claim.Namespace, Predicate: func(o api.Object) bool {
			p := o.(*api.Pod)
			return p.Spec.NodeName != "" && p.DeletionTimestamp == nil && usesClaim(p, claim.Name)
		}})
		if err != nil {
			return nil, claim, false, fmt.Errorf("list consumers of claim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
		if len(pods) == 0 {
			r.events.Event(claim, api.EventTypeNormal, ReasonWaitForFirstConsumer, msgWaitConsumer)
			// A pod that waited for this claim to exist may fit now.
			r.changed()
			return nil, claim, true, nil
		}
		name = pods[0].(*api.Pod).Spec.NodeName
		c := claim.DeepCopy()
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[api.AnnotationSelectedNode] = name
		updated, err := r.store.Update(ctx, c)
		if err != nil {
			return nil, claim, false, fmt.Errorf("select node %s for claim %s/%s: %w", name, c.Namespace, c.Name, err)
		}
		claim = updated.(*api.PersistentVolumeClaim)
	}
	obj, err := r.store.Get(nodeKind, "", name)
	if store.IsNotFound(err) {
		r.events.Event(claim, api.EventTypeWarning, ReasonProvisioningFailed, fmt.Sprintf("selected node %q does not exist", name))
		return nil, claim, true, nil
	}
	if err != nil {
		return nil, claim, false, fmt.Errorf("get node %s: %w", name, err)
	}
	return obj.(*api.Node), claim, false, nil
}

func usesClaim(p *api.Pod, claim string) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
	}
	return false
}

// bind binds pv and claim: Kubernetes' two steps, the volume's claimRef
// and then the claim's volumeName, written in one store transaction, so
// no crash falls between them. A half-bound pair all the same (a volume
// whose claimRef a user or a tool wrote through the API) is completed by
// the claim's next sync, as a pre-bound volume.
func (r *Reconciler) bind(ctx context.Context, pv *api.PersistentVolume, claim *api.PersistentVolumeClaim) error {
	v, c := bindings(pv, claim, r.clock.Now())
	_, err := r.store.Txn(ctx, func(tx *store.Txn) error {
		if v != nil {
			if _, err := tx.Update(v); err != nil {
				return fmt.Errorf("bind volume %s to claim %s/%s: %w", pv.Name, claim.Namespace, claim.Name, err)
			}
		}
		if _, err := tx.Update(c); err != nil {
			return fmt.Errorf("bind claim %s/%s to volume %s: %w", c.Namespace, c.Name, pv.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if claim.Status.Phase != api.ClaimBound {
		r.changed()
	}
	return nil
}

// bindings are the two writes of a binding: the volume (nil when it is
// already bound to the claim) and the claim. They are shallow copies that
// replace, never change, what they share with the stored objects (which
// no writer changes): copying whole objects was a large part of a
// binding's cost.
func bindings(pv *api.PersistentVolume, claim *api.PersistentVolumeClaim, now time.Time) (*api.PersistentVolume, *api.PersistentVolumeClaim) {
	var v *api.PersistentVolume
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != string(claim.UID) || pv.Status.Phase != api.VolumeBound {
		cp := *pv
		v = &cp
		v.Annotations = maps.Clone(pv.Annotations)
		if ref == nil {
			if v.Annotations == nil {
				v.Annotations = map[string]string{}
			}
			v.Annotations[api.AnnotationBoundByController] = "yes"
		}
		v.Spec.ClaimRef = claimRef(claim)
		setVolumePhase(v, api.VolumeBound, "", now)
	}
	cp := *claim
	c := &cp
	c.Annotations = maps.Clone(claim.Annotations)
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[annBindCompleted] = "yes"
	c.Spec.VolumeName = pv.Name
	c.Status = api.PersistentVolumeClaimStatus{
		Phase:       api.ClaimBound,
		AccessModes: pv.Spec.AccessModes,
		Capacity:    api.ResourceList{api.ResourceStorage: pv.Spec.Capacity[api.ResourceStorage]},
	}
	return v, c
}

// bound reports whether claim and pv are bound to each other and say so.
func bound(pv *api.PersistentVolume, claim *api.PersistentVolumeClaim) bool {
	ref := pv.Spec.ClaimRef
	return ref != nil && ref.UID == string(claim.UID) && pv.Status.Phase == api.VolumeBound &&
		claim.Spec.VolumeName == pv.Name && claim.Status.Phase == api.ClaimBound &&
		claim.Annotations[annBindCompleted] != ""
}

// claimRef is the reference a volume keeps to its claim.
func claimRef(claim *api.PersistentVolumeClaim) *api.ObjectReference {
	return &api.ObjectReference{
		Kind:            "PersistentVolumeClaim",
		APIVersion:      "v1",
		Namespace:       claim.Namespace,
		Name:            claim.Name,
		UID:             string(claim.UID),
		ResourceVersion: claim.ResourceVersion,
	}
}

// setVolumePhase sets a volume's phase, stamping the time it changed.
func setVolumePhase(pv *api.PersistentVolume, phase api.PersistentVolumePhase, msg string, now time.Time) {
	if pv.Status.Phase != phase {
		t := metav1.NewTime(now)
		pv.Status.LastPhaseTransitionTime = &t
	}
	pv.Status.Phase = phase
	pv.Status.Message = msg
	if msg == "" {
		pv.Status.Reason = ""
	}
}

// expand grows a bound claim's volume when the claim asks for more than it
// has: a local-path volume is a directory with no size of its own, so
// growing it is recording the new capacity on the volume and the claim,
// if the class allows expansion. Other volumes, and classes that do not
// allow it, keep their size and say so in an event.
func (r *Reconciler) expand(ctx context.Context, pv *api.PersistentVolume, claim *api.PersistentVolumeClaim) error {
	want := claim.Spec.Resources.Requests[api.ResourceStorage]
	have := pv.Spec.Capacity[api.ResourceStorage]
	if want.Cmp(have) <= 0 {
		return nil
	}
	class, err := r.class(claimClass(claim))
	if err != nil {
		return err
	}
	switch {
	case class == nil || class.AllowVolumeExpansion == nil || !*class.AllowVolumeExpansion:
		r.events.Event(claim, api.EventTypeWarning, ReasonVolumeResizeFailed,
			fmt.Sprintf("only dynamically provisioned claims of a class with allowVolumeExpansion can be resized; volume %s stays %s", pv.Name, have.String()))
		return nil
	case pv.Annotations[api.AnnotationProvisionedBy] != api.LocalPathProvisioner:
		r.events.Event(claim, api.EventTypeWarning, ReasonVolumeResizeFailed,
			fmt.Sprintf("volume %s was not made by %s, which alone berth can resize", pv.Name, api.LocalPathProvisioner))
		return nil
	}
	v := pv.DeepCopy()
	v.Spec.Capacity[api.ResourceStorage] = want
	c := claim.DeepCopy()
	c.Status.Capacity = api.ResourceList{api.ResourceStorage: want}
	_, err = r.store.Txn(ctx, func(tx *store.Txn) error {
		if _, err := tx.Update(v); err != nil {
			return fmt.Errorf("resize volume %s: %w", v.Name, err)
		}
		if _, err := tx.Update(c); err != nil {
			return fmt.Errorf("resize claim %s/%s: %w", c.Namespace, c.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.events.Event(c, api.EventTypeNormal, ReasonVolumeResizeSuccess, fmt.Sprintf("volume %s resized to %s", v.Name, want.String()))
	return nil
}
