package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// DELETE takes Kubernetes' DeleteOptions in the body or the query
// (gracePeriodSeconds, preconditions, propagationPolicy, orphanDependents).
//
// The propagation policy is recorded the way Kubernetes records it, as a
// finalizer the garbage collector acts on: Foreground adds
// "foregroundDeletion" (the GC deletes the dependents, in the foreground
// too, then removes it),
// Orphan (or orphanDependents=true) adds "orphan" (the GC removes the
// owner references of the dependents, then removes it). Background, the
// default, adds nothing: the object goes and the GC deletes its dependents
// after it. An object with finalizers, a pod running on a node, and a
// namespace (spec.finalizers) are only marked deleted, and the answer
// shows the deletionTimestamp; the others are gone when the answer comes.
// Either way the answer is 200 with the object, as Kubernetes gives it.

// serveDelete answers DELETE on an object.
func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	opts, err := s.deleteOptions(w, r)
	if err != nil {
		WriteError(w, err)
		return
	}
	old, err := s.store.GetForWrite(r.Context(), req.kind, req.namespace, req.name)
	if err != nil {
		if authErr := s.authorize(r, req, nil, nil); authErr != nil {
			err = authErr
		}
		WriteError(w, err)
		return
	}
	if err := s.authorize(r, req, nil, old); err != nil {
		WriteError(w, err)
		return
	}
	out, err := s.deleteObject(r, req, opts, old)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeStored(w, http.StatusOK, req.served(out))
}

// deleteObject deletes the object req names, which the caller read as
// old and was allowed to delete, through admission and with opts.
func (s *Server) deleteObject(r *http.Request, req *resourceRequest, opts *metav1.DeleteOptions, old api.Object) (api.Object, error) {
	if _, err := s.mutate(r, req, nil, old, nil); err != nil {
		return nil, err
	}
	if err := s.validateAdmission(r, req, nil, old, opts); err != nil {
		return nil, err
	}
	if err := s.admit(r.Context(), req, nil, old); err != nil {
		return nil, err
	}
	var out api.Object
	err := s.write(r, len(opts.DryRun) > 0, func(tx *store.Txn) error {
		var err error
		out, err = deleteIn(tx, req.kind, req.namespace, req.name, opts)
		return err
	}, &out, old.GetResourceVersion())
	return out, err
}

// deleteIn deletes an object inside a transaction with opts: their grace
// period and preconditions, and their propagation policy recorded as a
// finalizer first.
func deleteIn(tx *store.Txn, k *api.Kind, namespace, name string, opts *metav1.DeleteOptions) (api.Object, error) {
	finalizer := propagationFinalizer(opts)
	storeOpts := store.DeleteOptions{GracePeriodSeconds: opts.GracePeriodSeconds}
	if p := opts.Preconditions; p != nil {
		storeOpts.Preconditions = &store.Preconditions{}
		if p.UID != nil {
			storeOpts.Preconditions.UID = string(*p.UID)
		}
		if p.ResourceVersion != nil {
			storeOpts.Preconditions.ResourceVersion = *p.ResourceVersion
		}
	}
	cur, err := tx.Get(k, namespace, name)
	if err != nil {
		return nil, err
	}
	if finalizer != "" && cur.GetDeletionTimestamp() == nil && !slices.Contains(cur.GetFinalizers(), finalizer) {
		if err := checkPreconditions(k, cur, storeOpts.Preconditions); err != nil {
			return nil, err
		}
		marked := cur.DeepCopyObject().(api.Object)
		marked.SetFinalizers(append(slices.Clone(cur.GetFinalizers()), finalizer))
		if _, err := tx.Update(marked); err != nil {
			return nil, err
		}
		// The precondition on resourceVersion held for the object as
		// the caller saw it; the finalizer just moved it on.
		storeOpts.Preconditions = nil
	}
	return tx.Delete(k, namespace, name, storeOpts)
}

// serveDeleteCollection answers DELETE on a collection, Kubernetes'
// deletecollection: every object its label and field selectors pick is
// deleted as a DELETE of it would be (the same options: grace,
// propagation, dry run), one at a time; one gone meanwhile is passed
// over. The answer is the list of the objects deleted, as each delete
// left them.
func (s *Server) serveDeleteCollection(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	opts, err := s.deleteOptions(w, r)
	if err != nil {
		WriteError(w, err)
		return
	}
	sel, err := parseSelection(req.kind, req.namespace, r.URL.Query())
	if err != nil {
		WriteError(w, err)
		return
	}
	if err := s.authorizeSelection(r.Context(), req, sel); err != nil {
		WriteError(w, err)
		return
	}
	snap := s.store.Snapshot()
	var picked []api.Object
	if err := snap.Each(req.kind, sel.filter, func(obj api.Object) bool {
		picked = append(picked, obj)
		return true
	}); err != nil {
		WriteError(w, err)
		return
	}
	var deleted []api.Object
	for _, old := range picked {
		one := *req
		one.name = old.GetName()
		out, err := s.deleteObject(r, &one, opts, old)
		switch {
		case isNotFound(err):
			continue
		case err != nil:
			// Those deleted so far stay deleted, as in Kubernetes.
			WriteError(w, err)
			return
		}
		deleted = append(deleted, out)
	}
	lw := newListWriter(w, req.kind, listMeta{rev: snap.Revision()}, nil)
	for _, obj := range deleted {
		if !lw.add(obj) {
			break
		}
	}
	if err := lw.close(); err != nil {
		s.log.Debug("deletecollection answer cut short", "resource", req.kind.Resource, "err", err)
	}
}

// checkPreconditions tests DeleteOptions.preconditions before the delete
// changes the object to add a finalizer.
func checkPreconditions(k *api.Kind, obj api.Object, p *store.Preconditions) error {
	if p == nil {
		return nil
	}
	if p.UID != "" && p.UID != string(obj.GetUID()) || p.ResourceVersion != "" && p.ResourceVersion != obj.GetResourceVersion() {
		return &store.ObjectError{Err: store.ErrConflict, Kind: k, Namespace: obj.GetNamespace(), Name: obj.GetName(),
			Detail: "precondition failed: the object has changed (uid " + string(obj.GetUID()) + ", resourceVersion " + obj.GetResourceVersion() + ")"}
	}
	return nil
}

// propagationFinalizer is the finalizer that records a propagation policy.
func propagationFinalizer(opts *metav1.DeleteOptions) string {
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationForeground:
			return metav1.FinalizerDeleteDependents
		case metav1.DeletePropagationOrphan:
			return metav1.FinalizerOrphanDependents
		}
		return ""
	}
	if o := opts.OrphanDependents; o != nil && *o { //nolint:staticcheck // kept for old clients, as Kubernetes does
		return metav1.FinalizerOrphanDependents
	}
	return ""
}

// deleteOptions reads DeleteOptions from the query, then the body.
func (s *Server) deleteOptions(w http.ResponseWriter, r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	q := r.URL.Query()
	if v := q.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, badRequest("invalid gracePeriodSeconds %q", v)
		}
		opts.GracePeriodSeconds = &n
	}
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	if v := q.Get("orphanDependents"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, badRequest("invalid orphanDependents %q", v)
		}
		opts.OrphanDependents = &b //nolint:staticcheck // kept for old clients
	}
	opts.DryRun = q["dryRun"] // the body's, if it has one, wins
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	if contentType(r) == mediaProtobuf && len(body) > 0 {
		// kubectl drain, where there is no eviction API, deletes each pod
		// with its options as protobuf.
		if body, err = protobufToJSON(body); err != nil {
			return nil, err
		}
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, opts); err != nil {
			return nil, badRequest("the body of a delete must be DeleteOptions: %v", err)
		}
	}
	if err := checkDeleteOptions(opts); err != nil {
		return nil, err
	}
	return opts, nil
}

// checkDeleteOptions refuses options Kubernetes refuses (a dryRun other
// than All, an unknown propagation policy, both ways of asking to
// orphan) and takes a negative grace period as zero, as it does.
func checkDeleteOptions(opts *metav1.DeleteOptions) error {
	if _, err := dryRunOf(opts.DryRun); err != nil {
		return err
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan:
		default:
			return badRequest("propagationPolicy must be Background, Foreground or Orphan, not %q", *p)
		}
		if opts.OrphanDependents != nil { //nolint:staticcheck // kept for old clients
			return badRequest("orphanDependents and propagationPolicy may not both be set")
		}
	}
	if p := opts.Preconditions; p != nil && p.ResourceVersion != nil {
		if err := checkResourceVersion("preconditions.resourceVersion", *p.ResourceVersion); err != nil {
			return err
		}
	}
	if g := opts.GracePeriodSeconds; g != nil && *g < 0 {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	return nil
}
