package apiserver

import (
	"net/http"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/strategy"
	"github.com/berth-dev/berth/store"
)

// generateNameAttempts is how often a create with generateName tries
// another random suffix when the name it drew is taken, as Kubernetes
// (1.30+) does.
const generateNameAttempts = 8

// serveCreate answers POST on a collection: 201 with the stored object.
func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	obj, err := s.readObject(w, r, req)
	if err != nil {
		WriteError(w, err)
		return
	}
	if err := checkIdentity(req, obj); err != nil {
		WriteError(w, err)
		return
	}
	// A create records no fields; an apply's create records the
	// applier's, which it made.
	obj.SetManagedFields(nil)
	out, err := s.create(r, req, obj)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeStored(w, http.StatusCreated, req.served(out))
}

// create runs the admission chain on a decoded object and stores it.
func (s *Server) create(r *http.Request, req *resourceRequest, obj api.Object) (api.Object, error) {
	ctx := r.Context()
	k := req.kind
	dry, err := isDryRun(r)
	if err != nil {
		return nil, err
	}
	strategy.For(k).PrepareForCreate(obj)
	generate := obj.GetName() == "" && obj.GetGenerateName() != ""
	for attempt := 1; ; attempt++ {
		if generate {
			obj.SetName(obj.GetGenerateName() + rand.String(5))
		}
		if err := s.authorize(r, req, obj, nil); err != nil {
			return nil, err
		}
		if err := validate(k, obj, nil); err != nil {
			return nil, err
		}
		if obj, err = s.mutate(r, req, obj, nil, validate); err != nil {
			return nil, err
		}
		if err := s.validateAdmission(r, req, obj, nil, nil); err != nil {
			return nil, err
		}
		if err := s.admit(ctx, req, obj, nil); err != nil {
			return nil, err
		}
		var out api.Object
		err := s.write(r, dry, func(tx *store.Txn) error {
			if err := checkNamespace(tx, k, obj.GetNamespace()); err != nil {
				return err
			}
			var err error
			out, err = tx.Create(obj)
			return err
		}, &out, "")
		if generate && store.IsAlreadyExists(err) && attempt < generateNameAttempts {
			continue
		}
		return out, err
	}
}
