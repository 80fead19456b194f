package apiserver

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/strategy"
	"github.com/berth-dev/berth/apiserver/admission"
)

// The admission the cluster's users configure runs inside the write
// chain (admission.go) as kube-apiserver runs it: after defaulting and
// validation, the mutating webhooks, whose changes are defaulted and
// validated again; then the validating admission policies and the
// validating webhooks; then berth's own plugins (quota last, as
// Kubernetes' ResourceQuota). Their warnings reach the client as Warning
// headers.

// admissionRequest describes a write to the webhooks and policies: a
// create when there is no old object, a delete when there is no new one.
func (s *Server) admissionRequest(r *http.Request, req *resourceRequest, obj, old api.Object, opts runtime.Object) *admission.Request {
	op := admission.Update
	switch {
	case old == nil:
		op = admission.Create
		if opts == nil {
			opts = &metav1.CreateOptions{}
		}
	case obj == nil:
		op = admission.Delete
	default:
		if opts == nil {
			opts = &metav1.UpdateOptions{}
		}
	}
	dry, _ := isDryRun(r)
	name := req.name
	if name == "" && obj != nil {
		name = obj.GetName()
	}
	return &admission.Request{
		Operation: op, Kind: req.kind, Version: req.version,
		Namespace: req.namespace, Name: name, Subresource: req.subresource,
		Object: obj, OldObject: old, Options: opts,
		User: req.id.UserInfo(), DryRun: dry,
	}
}

// mutate sends a write to the mutating webhooks; an object they changed
// is defaulted and validated again with check.
func (s *Server) mutate(r *http.Request, req *resourceRequest, obj, old api.Object, check func(k *api.Kind, obj, old api.Object) error) (api.Object, error) {
	areq := s.admissionRequest(r, req, obj, old, nil)
	out, warnings, err := s.webhooks.Mutate(r.Context(), areq, func(data []byte) (api.Object, error) {
		o, _, err := req.decodeBody(data, true, metav1.FieldValidationIgnore)
		if err != nil {
			return nil, err
		}
		if req.kind.HasStatus && req.subresource == "" {
			strategy.CopyStatus(o, obj) // what a write to the object keeps
		}
		return o, nil
	})
	req.warn(warnings)
	if err != nil || out == obj {
		return obj, err
	}
	if out.GetName() != obj.GetName() || out.GetNamespace() != obj.GetNamespace() {
		return nil, badRequest("a mutating webhook changed the name or namespace of %s %q", req.kind.GVK.Kind, obj.GetName())
	}
	if err := check(req.kind, out, old); err != nil {
		return nil, err
	}
	return out, nil
}

// validateAdmission evaluates a write against the validating admission
// policies, then sends it to the validating webhooks, as Kubernetes
// orders its plugins.
func (s *Server) validateAdmission(r *http.Request, req *resourceRequest, obj, old api.Object, opts runtime.Object) error {
	areq := s.admissionRequest(r, req, obj, old, opts)
	warnings, err := s.policies.Validate(r.Context(), areq)
	req.warn(warnings)
	if err != nil {
		return err
	}
	warnings, err = s.webhooks.Validate(r.Context(), areq)
	req.warn(warnings)
	return err
}

// warn sends warnings to the client as Warning headers (299, as
// Kubernetes sends them; kubectl prints "Warning: " and the text).
func (req *resourceRequest) warn(warnings []string) {
	if req.header == nil {
		return
	}
	for _, text := range warnings {
		if h, err := utilnet.NewWarningHeader(299, "-", text); err == nil {
			req.header.Add("Warning", h)
		}
	}
}
