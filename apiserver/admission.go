package apiserver

import (
	"context"
	"net/http"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/strategy"
	"github.com/berth-dev/berth/apiserver/admission"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/store"
)

// Every write goes through one chain, in this order: decode (400), the
// caller's authorization (403), defaulting, validation and immutable
// fields (422), the admission plugins (403 or their own Status), then one
// store transaction that also checks the namespace (404, or 403 while it
// terminates) and the resourceVersion (409).

var namespaceKind = api.KindOf(&api.Namespace{})

// attributes describes a request to the authorizer and the admission
// plugins.
func (req *resourceRequest) attributes(obj, old api.Object, sel fields.Selector) auth.Attributes {
	name := req.name
	if name == "" && obj != nil {
		name = obj.GetName() // a create
	}
	return auth.Attributes{
		Verb:          req.verb,
		Kind:          req.kind,
		Namespace:     req.namespace,
		Name:          name,
		Subresource:   req.subresource,
		Object:        obj,
		Old:           old,
		FieldSelector: sel,
	}
}

// authorize asks the Authorizer; a refusal becomes a 403.
func (s *Server) authorize(r *http.Request, req *resourceRequest, obj, old api.Object) error {
	return s.authorizeAttrs(r.Context(), req, req.attributes(obj, old, nil))
}

// authorizeSelection asks the Authorizer about a request on what sel
// picks (a list, a watch, a deletecollection), selectors included.
func (s *Server) authorizeSelection(ctx context.Context, req *resourceRequest, sel *selection) error {
	attrs := req.attributes(nil, nil, sel.fields)
	attrs.LabelSelector = sel.filter.Labels
	return s.authorizeAttrs(ctx, req, attrs)
}

func (s *Server) authorizeAttrs(ctx context.Context, req *resourceRequest, a auth.Attributes) error {
	if err := s.cfg.Authorizer.Authorize(ctx, req.id, a); err != nil {
		return forbidden(req.kind, req.name, err)
	}
	return nil
}

// admit runs the admission plugins.
func (s *Server) admit(ctx context.Context, req *resourceRequest, obj, old api.Object) error {
	a := req.attributes(obj, old, nil)
	for _, p := range s.cfg.Admission {
		if err := p.Admit(ctx, a, req.id); err != nil {
			return forbidden(req.kind, a.Name, err)
		}
	}
	return nil
}

// validate defaults and validates an object, and for an update checks the
// fields that may not change; every problem is in the one 422.
func validate(k *api.Kind, obj, old api.Object) error {
	api.MergeStringData(obj)
	ns, isNamespace := obj.(*api.Namespace)
	var finalizers []api.FinalizerName
	if isNamespace {
		finalizers = ns.Spec.Finalizers
	}
	api.Default(obj)
	if isNamespace && old != nil {
		// Kubernetes gives a namespace its finalizer when it is made, not
		// again when the finalize subresource has taken it away.
		ns.Spec.Finalizers = finalizers
	}
	errs := api.Validate(obj)
	if old != nil {
		errs = append(errs, api.ValidateUpdate(old, obj)...)
	}
	if k.Custom {
		errs = append(errs, validateCustom(k, obj, old)...)
	}
	if p, ok := obj.(*api.ValidatingAdmissionPolicy); ok && len(errs) == 0 {
		errs = append(errs, admission.CheckPolicy(p)...)
	}
	if len(errs) > 0 {
		return invalid(k, obj.GetName(), errs)
	}
	return nil
}

// validateStatus is validate for a status write, whose object is the
// stored one with a new status (see withStatus): only the status is
// defaulted, since the rest is shared with the stored object, which was
// defaulted when it was written and may not be written again. Nor is the
// rest validated again, as Kubernetes validates a status write: it is
// what the store holds, and a problem in it is not the status writer's
// to answer for. The update checks still run (the metadata and spec are
// the stored ones, so they pass at once).
func validateStatus(k *api.Kind, obj, old api.Object) error {
	api.DefaultStatus(obj)
	errs := api.ValidateUpdate(old, obj)
	if k.Custom {
		errs = append(errs, validateCustom(k, obj, old)...)
	}
	if len(errs) > 0 {
		return invalid(k, obj.GetName(), errs)
	}
	return nil
}

// withStatus returns the next version of old for a status write: old's
// metadata and spec with in's status. Only the top-level struct is new;
// everything under it is old's, shared rather than copied, which the
// store's immutable objects allow: the write sets only top-level metadata
// fields (resourceVersion, generation) of the version it stores, and in
// (decoded for this request) gives up its status. A status write is the
// most frequent write there is (every pod's agent, every node's
// heartbeat), and sharing also lets the store's and validation's
// comparisons of the unchanged spec stop at once.
func withStatus(old, in api.Object) api.Object {
	if u, ok := old.(*unstructured.Unstructured); ok {
		obj := &unstructured.Unstructured{Object: make(map[string]any, len(u.Object))}
		for key, v := range u.Object {
			obj.Object[key] = v
		}
		strategy.CopyStatus(obj, in)
		return obj
	}
	v := reflect.New(reflect.TypeOf(old).Elem())
	v.Elem().Set(reflect.ValueOf(old).Elem())
	obj := v.Interface().(api.Object)
	strategy.CopyStatus(obj, in)
	if p, ok := obj.(*api.Pod); ok {
		// Every pod's agent writes the same few condition types, phases
		// and images: the store keeps one copy of each.
		api.InternPodStatus(&p.Status)
	}
	return obj
}

// checkNamespace refuses to put an object in a namespace that does not
// exist (404), as Kubernetes' NamespaceLifecycle admission does. Run
// inside the write's transaction, so a namespace cannot go between the
// check and the write. A namespace being deleted is the store's to refuse,
// for every writer (namespace.Admit); storeError answers that refusal.
func checkNamespace(r reader, k *api.Kind, ns string) error {
	if !k.Namespaced {
		return nil
	}
	if _, err := r.Get(namespaceKind, "", ns); err != nil {
		if isNotFound(err) {
			return apierrors.NewNotFound(namespaceKind.GroupResource(), ns)
		}
		return err
	}
	return nil
}

// reader is what checkNamespace reads from: a snapshot or a transaction.
type reader interface {
	Get(k *api.Kind, namespace, name string) (api.Object, error)
}

func isNotFound(err error) bool {
	return store.IsNotFound(err) || apierrors.IsNotFound(err)
}

// nameMismatch is the 400 of a body that names another object than the
// path.
func nameMismatch(what, inBody, inPath string) error {
	return badRequest("the %s of the object (%s) does not match the %s on the URL (%s)", what, inBody, what, inPath)
}

// checkIdentity makes a decoded body agree with the path: a missing
// namespace comes from the path, a different one is a 400, and so is a
// different name where the path has one.
func checkIdentity(req *resourceRequest, obj api.Object) error {
	if req.kind.Namespaced {
		switch ns := obj.GetNamespace(); {
		case ns == "":
			obj.SetNamespace(req.namespace)
		case ns != req.namespace:
			return badRequest("the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", ns, req.namespace)
		}
	}
	if req.name != "" && obj.GetName() != req.name {
		if obj.GetName() == "" {
			obj.SetName(req.name)
		} else {
			return nameMismatch("name", obj.GetName(), req.name)
		}
	}
	return nil
}

// maxRetries bounds the retries of unconditional updates and patches.
const maxRetries = 10
