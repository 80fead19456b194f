package admission

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Operations of a Request, as AdmissionReview names them.
const (
	Create  = k8sadmission.Create
	Update  = k8sadmission.Update
	Delete  = k8sadmission.Delete
	Connect = k8sadmission.Connect
)

// Request is one write as the admission webhooks and policies see it.
type Request struct {
	Operation k8sadmission.Operation
	Kind      *api.Kind
	// Version is the version the request's path names, for a custom kind
	// served in several; empty means the kind's own.
	Version                      string
	Namespace, Name, Subresource string
	// Object is the new object (nil for a delete or a connect), OldObject
	// the stored one (nil for a create and a connect).
	Object, OldObject api.Object
	// Options are the request's CreateOptions, UpdateOptions or
	// DeleteOptions (may be nil); of a connect, its options
	// (PodExecOptions, …), with their kind set, which are what the
	// webhooks and policies are sent as the object, as Kubernetes sends
	// them.
	Options runtime.Object
	User    user.Info
	DryRun  bool
}

// Reader is what admission reads the configurations, namespaces and
// endpoints from: the store.
type Reader interface {
	Get(k *api.Kind, namespace, name string) (api.Object, error)
	List(k *api.Kind, f store.Filter) ([]api.Object, uint64, error)
}

// storeAll lists every object of a kind.
var storeAll = store.Filter{}

var (
	namespaceKind = api.KindOf(&api.Namespace{})
	serviceKind   = api.KindOf(&api.Service{})
	endpointsKind = api.KindOf(&api.Endpoints{})
)

// exempt reports whether a request is about admission's own
// configuration, which no webhook or policy is asked about, as in
// Kubernetes: a broken webhook could otherwise never be removed.
func (r *Request) exempt() bool {
	return r.Kind.GVK.Group == api.AdmissionRegistrationV1.Group
}

// gvk is the group, version and kind of the request as its path names it.
func (r *Request) gvk() schema.GroupVersionKind {
	gvk := r.Kind.GVK
	if r.Version != "" {
		gvk.Version = r.Version
	}
	return gvk
}

// attributes are the request as k8s.io/apiserver's matchers and
// AdmissionReview builder take it, the objects in version v of the kind.
// Only a call needs the objects: matching leaves them out.
func (r *Request) attributes(v string, objects bool) k8sadmission.Attributes {
	if r.Operation == Connect {
		gvr := r.Kind.GVK.GroupVersion().WithResource(r.Kind.Resource)
		var obj runtime.Object
		if objects {
			obj = r.Options
		}
		return k8sadmission.NewAttributesRecord(obj, nil, r.Options.GetObjectKind().GroupVersionKind(), r.Namespace, r.Name,
			gvr, r.Subresource, r.Operation, nil, false, r.User)
	}
	gvk := r.gvk()
	gvk.Version = v
	gvr := gvk.GroupVersion().WithResource(r.Kind.Resource)
	var obj, old runtime.Object
	if objects {
		obj, old = inVersion(r.Object, gvk), inVersion(r.OldObject, gvk)
	}
	return k8sadmission.NewAttributesRecord(obj, old, gvk, r.Namespace, r.Name,
		gvr, r.Subresource, r.Operation, r.Options, r.DryRun, r.User)
}

// versioned is the request in version v of its kind, objects included,
// as a webhook is sent it and CEL reads it.
func (r *Request) versioned(v string) *k8sadmission.VersionedAttributes {
	a := r.attributes(v, true)
	return &k8sadmission.VersionedAttributes{Attributes: a, VersionedKind: a.GetKind(),
		VersionedObject: k8sadmission.NewLazyObject(a.GetObject()), VersionedOldObject: k8sadmission.NewLazyObject(a.GetOldObject())}
}

// inVersion returns obj with its apiVersion and kind set to gvk, as an
// AdmissionReview carries it: a copy, since stored objects never change.
// A custom kind's versions hold the same fields (conversion None).
func inVersion(obj api.Object, gvk schema.GroupVersionKind) runtime.Object {
	if obj == nil {
		return nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		out := &unstructured.Unstructured{Object: make(map[string]any, len(u.Object))}
		for key, v := range u.Object {
			out.Object[key] = v
		}
		out.SetGroupVersionKind(gvk)
		return out
	}
	out := obj.DeepCopyObject()
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out
}

// matchingVersion returns the version of the request a webhook's or
// policy's rules match, and whether any does: the request's own, or
// under matchPolicy Equivalent another version the kind is served in.
func (r *Request) matchingVersion(rulesOf []admissionregistrationv1.RuleWithOperations, policy *admissionregistrationv1.MatchPolicyType) (string, bool) {
	own := r.gvk().Version
	if matchRules(rulesOf, r.attributes(own, false)) {
		return own, true
	}
	if policy == nil || *policy != admissionregistrationv1.Equivalent {
		return "", false
	}
	for _, v := range r.Kind.Versions {
		if v != own && matchRules(rulesOf, r.attributes(v, false)) {
			return v, true
		}
	}
	return "", false
}

func matchRules(rs []admissionregistrationv1.RuleWithOperations, a k8sadmission.Attributes) bool {
	for i := range rs {
		m := rules.Matcher{Rule: rs[i], Attr: a}
		if m.Matches() {
			return true
		}
	}
	return false
}

// namespaceLabels are the labels a namespaceSelector is matched against,
// and false when none applies: a cluster-scoped object other than a
// namespace is never exempted by one, as in Kubernetes. A namespace
// itself is matched by its own labels, new ones when it changes.
func (r *Request) namespaceLabels(rd Reader) (labels.Set, bool, error) {
	if r.Kind == namespaceKind && r.Subresource == "" {
		switch {
		case r.Object != nil:
			return r.Object.GetLabels(), true, nil
		case r.OldObject != nil:
			return r.OldObject.GetLabels(), true, nil
		}
	}
	ns := r.Namespace
	if r.Kind == namespaceKind {
		ns = r.Name
	}
	if ns == "" {
		return nil, false, nil
	}
	obj, err := rd.Get(namespaceKind, "", ns)
	if store.IsNotFound(err) {
		return labels.Set{}, true, nil // the write is refused later, as it names no namespace
	}
	if err != nil {
		return nil, false, fmt.Errorf("namespace %s: %w", ns, err)
	}
	return obj.GetLabels(), true, nil
}

// selects reports whether a request passes a namespaceSelector and an
// objectSelector. An object matches when its new or its old labels do.
func (r *Request) selects(rd Reader, nsSel, objSel *metav1.LabelSelector) (bool, error) {
	if nsSel != nil {
		sel, err := metav1.LabelSelectorAsSelector(nsSel)
		if err != nil {
			return false, fmt.Errorf("namespaceSelector: %w", err)
		}
		if !sel.Empty() {
			set, applies, err := r.namespaceLabels(rd)
			if err != nil {
				return false, err
			}
			if applies && !sel.Matches(set) {
				return false, nil
			}
		}
	}
	if objSel != nil {
		sel, err := metav1.LabelSelectorAsSelector(objSel)
		if err != nil {
			return false, fmt.Errorf("objectSelector: %w", err)
		}
		if !sel.Empty() {
			matched := false
			for _, o := range []api.Object{r.Object, r.OldObject} {
				if o != nil && sel.Matches(labels.Set(o.GetLabels())) {
					matched = true
				}
			}
			if !matched {
				return false, nil
			}
		}
	}
	return true, nil
}

// contextDone is ctx's error once it is done, for a caller that would
// otherwise go on to call another webhook.
func contextDone(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
		return nil
	}
}
