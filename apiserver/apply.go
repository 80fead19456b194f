package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/store"
)

// Server-side apply (PATCH with application/apply-patch+yaml, kubectl
// apply --server-side) merges the fields a manager sets into the object
// and records in metadata.managedFields which manager owns which field,
// with Kubernetes' own field manager (k8s.io/apimachinery's
// managedfields) over the kinds' OpenAPI schemas. A field another manager
// owns with another value is a 409 conflict naming it, unless the apply
// forces; a field the manager set before and no longer sets is removed,
// when no other manager owns it.
//
// Ownership is recorded from an object's first apply on: writes of other
// kinds (update, patch) to an object that has managedFields record their
// manager's fields too (the fieldManager parameter, else the client's
// user agent), so that an apply then conflicts with them. The writes the
// control plane makes in process (controllers, the scheduler) are not
// recorded. An apply to the status subresource sets and owns the status
// alone, recorded apart (subresource "status"), as the status's other
// writers are. The lists of a pod's containers, init containers, volumes and
// environment merge element by element, keyed by name (volume mounts by
// mount path), as Kubernetes merges them; other lists are atomic, owned
// whole.

// fieldManagers holds one field manager per kind, made on first use.
type fieldManagers struct {
	mu       sync.Mutex
	managers map[fieldManagerKey]*managedfields.FieldManager
}

type fieldManagerKey struct {
	kind        *api.Kind
	subresource string
}

// forKind returns the field manager of a kind, or of its subresource
// (status), whose managers are recorded apart.
func (f *fieldManagers) forKind(k *api.Kind, subresource string) (*managedfields.FieldManager, error) {
	converter, err := typeConverter()
	if err != nil {
		return nil, err
	}
	if k.Custom {
		// Fields of a custom resource are told apart by their values,
		// as Kubernetes does for a CRD without a published schema.
		converter = managedfields.NewDeducedTypeConverter()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := fieldManagerKey{k, subresource}
	if m, ok := f.managers[key]; ok {
		return m, nil
	}
	m, err := managedfields.NewDefaultFieldManager(converter, objectConvertor{}, objectDefaulter{}, objectCreater{}, k.GVK, k.GVK.GroupVersion(), subresource, nil)
	if err != nil {
		return nil, err
	}
	if f.managers == nil {
		f.managers = map[fieldManagerKey]*managedfields.FieldManager{}
	}
	f.managers[key] = m
	return m, nil
}

// typeConverter reads the schemas, once; each kind's carries its group,
// version and kind, by which the converter finds it.
var typeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	defs, err := readOpenAPIDefinitions()
	if err != nil {
		return nil, err
	}
	schemas := make(map[string]*spec.Schema, len(defs))
	for name, d := range defs {
		s := &spec.Schema{}
		if err := json.Unmarshal(d.Schema, s); err != nil {
			return nil, fmt.Errorf("openapi definitions: %s: %w", name, err)
		}
		schemas[name] = s
	}
	return managedfields.NewTypeConverter(schemas, false)
})

// objectConvertor converts between berth's typed objects and the
// unstructured ones the field manager makes: every kind has one version.
type objectConvertor struct{}

func (objectConvertor) Convert(in, out, _ any) error {
	return fmt.Errorf("convert %T to %T: not supported", in, out)
}

func (objectConvertor) ConvertToVersion(in runtime.Object, _ runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return in, nil
	}
	k, ok := api.KindFor(u.GroupVersionKind())
	if !ok {
		return nil, fmt.Errorf("no kind %s", u.GroupVersionKind())
	}
	if k.Custom {
		return u, nil
	}
	obj := k.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func (objectConvertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

type objectDefaulter struct{}

func (objectDefaulter) Default(in runtime.Object) {
	if obj, ok := in.(api.Object); ok {
		api.Default(obj)
	}
}

type objectCreater struct{}

func (objectCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	k, ok := api.KindFor(gvk)
	if !ok {
		return nil, fmt.Errorf("no kind %s", gvk)
	}
	return k.New(), nil
}

// serveApply answers a server-side apply: PATCH with an apply
// configuration (YAML or JSON), the fieldManager parameter, and force.
func (s *Server) serveApply(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	q := r.URL.Query()
	manager := q.Get("fieldManager")
	if manager == "" {
		WriteError(w, badRequest("fieldManager is required for apply requests"))
		return
	}
	force := false
	if v := q.Get("force"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			WriteError(w, badRequest("force: want true or false, not %q", v))
			return
		}
		force = b
	}
	if req.subresource != "" && req.subresource != "status" {
		WriteError(w, badRequest("server-side apply is served on objects and their status, not on their %s", req.subresource))
		return
	}
	validation, err := fieldValidationOf(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		WriteError(w, err)
		return
	}
	patch, warnings, err := req.applyConfiguration(body, validation)
	addWarnings(w, warnings)
	if err != nil {
		WriteError(w, err)
		return
	}
	fm, err := s.fieldManagers.forKind(req.kind, req.subresource)
	if err != nil {
		WriteError(w, err)
		return
	}
	apply := func(live api.Object) (api.Object, error) {
		obj, err := managedObject(fm.Apply(live, patch.DeepCopy(), manager, force))
		if u, ok := obj.(*unstructured.Unstructured); ok && err == nil {
			_, err = pruneAndDefault(req.kind, u)
		}
		return obj, err
	}
	req.applied = true
	// Read as an update or a delete reads: a NotFound from the tables
	// the write would find, durable, and on a control plane that still
	// leads, not from a snapshot that may lag them.
	_, err = s.store.GetForWrite(r.Context(), req.kind, req.namespace, req.name)
	if err != nil && !store.IsNotFound(err) {
		WriteError(w, err)
		return
	}
	if store.IsNotFound(err) && req.subresource == "" {
		// An apply of an object that does not exist creates it, and
		// needs the right to.
		live := req.kind.New()
		live.SetNamespace(req.namespace)
		live.SetName(req.name)
		obj, err := apply(live)
		if err == nil {
			creq := *req
			creq.verb = auth.VerbCreate
			obj, err = s.create(r, &creq, obj)
		}
		if err == nil {
			writeStored(w, http.StatusCreated, req.served(obj))
			return
		}
		if !apierrors.IsAlreadyExists(err) {
			WriteError(w, err)
			return
		}
		// Created since it was looked for: apply to it.
	}
	out, err := s.update(r, req, false, apply)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeStored(w, http.StatusOK, req.served(out))
}

// recordFields records, in the managedFields of obj, the fields a write
// other than an apply sets, as its manager's: the request's fieldManager,
// else the first word of its user agent, as Kubernetes names it.
func (s *Server) recordFields(r *http.Request, req *resourceRequest, old, obj api.Object) (api.Object, error) {
	fm, err := s.fieldManagers.forKind(req.kind, req.subresource)
	if err != nil {
		return nil, err
	}
	manager := r.URL.Query().Get("fieldManager")
	if manager == "" {
		manager, _, _ = strings.Cut(r.UserAgent(), "/")
		if len(manager) > 128 {
			manager = manager[:128]
		}
	}
	return managedObject(fm.Update(old, obj, manager))
}

// managedObject is what the field manager made of an object, or its error
// in the API's words.
func managedObject(out runtime.Object, err error) (api.Object, error) {
	if err != nil {
		return nil, applyError(err)
	}
	obj, ok := out.(api.Object)
	if !ok {
		return nil, fmt.Errorf("the field manager made a %T", out)
	}
	return obj, nil
}

// applyConfiguration reads the body of an apply: one object of the path's
// kind, named as the path names it, in YAML or JSON. It is decoded as any
// body is (unknown fields under fieldValidation, values of the wrong type
// refused) and given to the field manager as it was sent, since what it
// leaves out matters.
func (req *resourceRequest) applyConfiguration(body []byte, validation string) (*unstructured.Unstructured, []string, error) {
	data, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, nil, badRequest("the apply configuration is not valid YAML or JSON: %v", err)
	}
	_, warnings, err := req.decodeBody(data, false, validation)
	if err != nil {
		return nil, warnings, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, warnings, badRequest("the apply configuration: %v", err)
	}
	if u.GetName() != req.name {
		return nil, warnings, badRequest("the name of the object (%q) does not match the name in the path (%q)", u.GetName(), req.name)
	}
	if ns := u.GetNamespace(); ns != "" && ns != req.namespace {
		return nil, warnings, badRequest("the namespace of the object (%q) does not match the namespace in the path (%q)", ns, req.namespace)
	}
	if req.kind.Namespaced {
		u.SetNamespace(req.namespace)
	}
	switch {
	case req.subresource == "status":
		// An apply to the status sets and owns nothing else, as a write
		// to the status keeps everything else.
		for k := range u.Object {
			if k != "apiVersion" && k != "kind" && k != "metadata" && k != "status" {
				delete(u.Object, k)
			}
		}
	case req.ignoresStatus():
		// As a write to the object keeps the stored status, an apply to
		// it neither sets nor owns any.
		delete(u.Object, "status")
	}
	return u, warnings, nil
}

// applyError keeps the field manager's API errors (a conflict is a 409
// that names each field and its manager) and makes the others a 400.
func applyError(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return err
	}
	return badRequest("apply: %v", err)
}
