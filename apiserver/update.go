package apiserver

import (
	"net/http"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/strategy"
	"github.com/berth-dev/berth/store"
)

// serveUpdate answers PUT on an object or its status.
func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	in, err := s.readObject(w, r, req)
	if err != nil {
		WriteError(w, err)
		return
	}
	if err := checkIdentity(req, in); err != nil {
		WriteError(w, err)
		return
	}
	conditional := in.GetResourceVersion() != ""
	out, err := s.update(r, req, conditional, func(api.Object) (api.Object, error) {
		if req.subresource == "status" {
			// A status write copies in's status into a new version and
			// changes nothing of in (see withStatus), so every attempt
			// may read in itself.
			return in, nil
		}
		return in.DeepCopyObject().(api.Object), nil
	})
	if err != nil {
		WriteError(w, err)
		return
	}
	writeStored(w, http.StatusOK, req.served(out))
}

// update writes the object next computes from the stored one, through the
// admission chain. A write to the object keeps the stored status and a
// write to the status keeps everything else, so spec and status have one
// writer each. With conditional, the resourceVersion next returns must be
// the stored one (409 otherwise); without, a write that lost a race with
// another is computed again from the newer object.
func (s *Server) update(r *http.Request, req *resourceRequest, conditional bool, next func(old api.Object) (api.Object, error)) (api.Object, error) {
	ctx := r.Context()
	k := req.kind
	dry, err := isDryRun(r)
	if err != nil {
		return nil, err
	}
	// current is the stored version a lost race met.
	var current api.Object
	for attempt := 1; ; attempt++ {
		old := current
		if old == nil {
			if old, err = s.store.GetForWrite(ctx, k, req.namespace, req.name); err != nil {
				if authErr := s.authorize(r, req, nil, nil); authErr != nil {
					return nil, authErr
				}
				return nil, err
			}
		}
		in, err := next(old)
		if err != nil {
			return nil, err
		}
		if err := checkResourceVersion("metadata.resourceVersion", in.GetResourceVersion()); err != nil {
			return nil, err
		}
		rv := old.GetResourceVersion()
		if conditional {
			rv = in.GetResourceVersion()
		}
		obj := in
		statusOnly := req.subresource == "status"
		switch {
		case statusOnly:
			obj = withStatus(old, in)
			if req.applied {
				// The field manager's record of the apply.
				obj.SetManagedFields(in.GetManagedFields())
			}
		case req.subresource == "finalize":
			// A namespace's spec.finalizers change only here, as in
			// Kubernetes: the namespace controller, or an operator freeing
			// a stuck namespace.
			ns := old.DeepCopyObject().(*api.Namespace)
			ns.Spec.Finalizers = in.(*api.Namespace).Spec.Finalizers
			obj = ns
		default:
			strategy.For(k).PrepareForUpdate(obj, old)
		}
		if !req.applied && len(old.GetManagedFields()) > 0 {
			// Applied once: who sets what is recorded from then on.
			if obj, err = s.recordFields(r, req, old, obj); err != nil {
				return nil, err
			}
		}
		if err := s.authorize(r, req, obj, old); err != nil {
			return nil, err
		}
		validateFn := validate
		if statusOnly {
			validateFn = validateStatus
		}
		if err := validateFn(k, obj, old); err != nil {
			return nil, err
		}
		if obj, err = s.mutate(r, req, obj, old, validateFn); err != nil {
			return nil, err
		}
		if err := s.validateAdmission(r, req, obj, old, nil); err != nil {
			return nil, err
		}
		if err := s.admit(ctx, req, obj, old); err != nil {
			return nil, err
		}
		obj.SetResourceVersion(rv)
		var out api.Object
		err = s.write(r, dry, func(tx *store.Txn) error {
			var err error
			out, err = tx.Update(obj)
			return err
		}, &out, old.GetResourceVersion())
		if err != nil && !conditional && store.IsConflict(err) && attempt < maxRetries {
			// Another write got there first. Build on the version it
			// stored, as Kubernetes builds on the object its failed
			// transaction hands back: a read may not see that version
			// until it is durable, and would race on the old one again.
			current = store.ConflictCurrent(err)
			if current != nil && (api.KindOf(current) != k || current.GetNamespace() != req.namespace || current.GetName() != req.name) {
				current = nil // another object's conflict (an admission hook's write): read again
			}
			continue
		}
		return out, err
	}
}
