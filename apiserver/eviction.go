package apiserver

import (
	"fmt"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/store"
)

// POST …/pods/{name}/eviction deletes a pod within its disruption budget,
// as Kubernetes' eviction subresource does, so that `kubectl drain` keeps
// a service's pods available while it empties a node. The check, the
// budget's decrement, the record of the pod in the budget's disruptedPods
// and the pod's deletion are one store transaction: a budget that moved
// meanwhile (another eviction, the disruption controller) is read in its
// new state, never spent twice.

// MaxDisruptedPods bounds a budget's disruptedPods: past it, evictions the
// disruption controller has not yet seen through are too many, and more
// are refused, as in Kubernetes.
const MaxDisruptedPods = 2000

// Messages of a refused eviction, Kubernetes' own, which kubectl drain
// prints and scripts look for.
const (
	msgViolatesBudget  = "Cannot evict pod as it would violate the pod's disruption budget."
	msgSeveralBudgets  = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
	budgetRetrySeconds = 10
)

var (
	budgetKind          = api.KindOf(&api.PodDisruptionBudget{})
	evictionGVK         = api.PolicyV1.WithKind("Eviction")
	budgetGroupResource = schema.GroupResource{Group: api.PolicyV1.Group, Resource: "poddisruptionbudget"}
)

// serveEviction answers a pod's eviction; the server has found the pod
// and authorized "create pods/eviction".
func (s *Server) serveEviction(w http.ResponseWriter, r *http.Request, obj api.Object) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		WriteError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/eviction"}, r.Method))
		return
	}
	pod := obj.(*api.Pod)
	data, err := s.readObjectBody(w, r)
	if err != nil {
		WriteError(w, err)
		return
	}
	ev, err := api.DecodeEviction(data)
	if err != nil {
		WriteError(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	if ev.Name != pod.Name {
		WriteError(w, apierrors.NewBadRequest("name in URL does not match name in Eviction object"))
		return
	}
	if ev.Namespace != "" && ev.Namespace != pod.Namespace {
		WriteError(w, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
		return
	}
	opts, err := evictionDeleteOptions(ev, r.URL.Query()["dryRun"])
	if err != nil {
		WriteError(w, err)
		return
	}
	req := &resourceRequest{kind: podKind, namespace: pod.Namespace, name: pod.Name, verb: auth.VerbDelete}
	req.id, _ = auth.IdentityFromContext(r.Context())
	if err := s.admit(r.Context(), req, nil, pod); err != nil {
		WriteError(w, err)
		return
	}
	now := metav1.NewTime(s.clock.Now())
	var out api.Object
	err = s.write(r, len(opts.DryRun) > 0, func(tx *store.Txn) error {
		var err error
		out, err = evict(tx, pod.Namespace, pod.Name, opts, now)
		return err
	}, &out, pod.ResourceVersion)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, &metav1.Status{TypeMeta: statusTypeMeta, Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// evictionDeleteOptions are the eviction's deleteOptions with the
// request's dryRun, which must agree with theirs when both say one.
func evictionDeleteOptions(ev *api.Eviction, dryRun []string) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if ev.DeleteOptions != nil {
		opts = ev.DeleteOptions.DeepCopy()
	}
	switch {
	case len(opts.DryRun) == 0:
		opts.DryRun = dryRun
	case len(dryRun) > 0 && !slices.Equal(dryRun, opts.DryRun):
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Non-matching dry-run options in request and content: %v and %v", dryRun, opts.DryRun))
	}
	return opts, checkDeleteOptions(opts)
}

// evict deletes the pod if its budget allows, inside tx, with Kubernetes'
// rules: a pod that is finished, pending or already being deleted goes
// without a budget; one with no budget goes; one with two or more is
// refused (500); an unready pod goes without spending the budget when its
// policy is AlwaysAllow, or (IfHealthyBudget) while the budget has its
// healthy pods; any other spends one of the budget's disruptions, or is
// refused with 429 when there is none to spend.
func evict(tx *store.Txn, namespace, name string, opts *metav1.DeleteOptions, now metav1.Time) (api.Object, error) {
	obj, err := tx.Get(podKind, namespace, name)
	if err != nil {
		return nil, err
	}
	pod := obj.(*api.Pod)
	if pod.Finished() || pod.Status.Phase == api.PodPending || pod.DeletionTimestamp != nil {
		return deleteIn(tx, podKind, namespace, name, opts)
	}
	budgets, err := budgetsOf(tx, pod)
	if err != nil {
		return nil, err
	}
	switch {
	case len(budgets) > 1:
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: msgSeveralBudgets}}
	case len(budgets) == 0:
		return deleteIn(tx, podKind, namespace, name, opts)
	}
	b := budgets[0]
	if !pod.Ready() {
		policy := b.Spec.UnhealthyPodEvictionPolicy
		if policy != nil && *policy == api.AlwaysAllow ||
			b.Status.CurrentHealthy >= b.Status.DesiredHealthy && b.Status.DesiredHealthy > 0 {
			// The pod counts toward no budget: it goes without spending
			// one.
			return deleteIn(tx, podKind, namespace, name, opts)
		}
	}
	if err := spend(tx, b, pod.Name, len(opts.DryRun) > 0, now); err != nil {
		return nil, err
	}
	return deleteIn(tx, podKind, namespace, name, opts)
}

// budgetsOf lists the budgets that guard a pod.
func budgetsOf(tx *store.Txn, pod *api.Pod) ([]*api.PodDisruptionBudget, error) {
	var out []*api.PodDisruptionBudget
	err := tx.Each(budgetKind, store.Filter{Namespace: pod.Namespace}, func(o api.Object) bool {
		if b := o.(*api.PodDisruptionBudget); b.Selects(pod) {
			out = append(out, b)
		}
		return true
	})
	return out, err
}

// spend takes one of the budget's disruptions for the pod and records the
// pod in its disruptedPods (not for a dry run), guarded by the
// resourceVersion the budget was read at, as Kubernetes' checkAndDecrement.
func spend(tx *store.Txn, b *api.PodDisruptionBudget, pod string, dryRun bool, now metav1.Time) error {
	switch {
	case b.Status.ObservedGeneration < b.Generation:
		return tooManyEvictions(fmt.Sprintf("The disruption budget %s is still being processed by the server.", b.Name), budgetRetrySeconds)
	case b.Status.DisruptionsAllowed < 0:
		return apierrors.NewForbidden(budgetGroupResource, b.Name, fmt.Errorf("pdb disruptions allowed is negative"))
	case len(b.Status.DisruptedPods) > MaxDisruptedPods:
		return apierrors.NewForbidden(budgetGroupResource, b.Name, fmt.Errorf("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
	case b.Status.DisruptionsAllowed == 0:
		return tooManyEvictions(fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", b.Name, b.Status.DesiredHealthy, b.Status.CurrentHealthy), 0)
	}
	if dryRun {
		return nil
	}
	nb := b.DeepCopy()
	nb.Status.DisruptionsAllowed--
	if nb.Status.DisruptionsAllowed == 0 {
		nb.SetDisruptionAllowed(now.Time)
	}
	if nb.Status.DisruptedPods == nil {
		nb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	nb.Status.DisruptedPods[pod] = now
	_, err := tx.Update(nb)
	return err
}

// tooManyEvictions is the 429 of a refused eviction, its cause the
// budget's.
func tooManyEvictions(cause string, retryAfter int) error {
	err := apierrors.NewTooManyRequests(msgViolatesBudget, retryAfter)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: api.DisruptionBudgetCause, Message: cause})
	return err
}
