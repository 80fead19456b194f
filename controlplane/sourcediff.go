package controlplane

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/reconcile/apply"
	"github.com/berth-dev/berth/store"
)

// SubresourceDiff is sources/diff.
const SubresourceDiff = "diff"

// serveDiff is GET /apis/berth.dev/v1/sources/NAME/diff?resource=R&
// namespace=NS&name=N: a unified diff of one live object against what the
// revision the source last applied declares for it, merged over it as a
// drift correction would write it (fields the source does not declare
// are the live ones). The body is empty when they agree; the revision is
// in the Berth-Revision header. The server has authorized "get
// sources/diff" on the Source; the caller must also be allowed to get the
// object. A Secret's values are shown as their sizes and digests.
func (s *sources) serveDiff(authz auth.Authorizer) apiserver.SubresourceHandler {
	return func(w http.ResponseWriter, r *http.Request, obj api.Object) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			apiserver.WriteError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: api.BerthV1.Group, Resource: "sources/diff"}, r.Method))
			return
		}
		src := obj.(*api.Source)
		q := r.URL.Query()
		resource, ns, name := q.Get("resource"), q.Get("namespace"), q.Get("name")
		k, ok := api.LookupResource(resource)
		switch {
		case !ok || k.Resource != resource:
			apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("sources/diff: resource %q: no such resource (give ?resource=, &namespace= and &name= of one object)", resource)))
			return
		case name == "":
			apiserver.WriteError(w, apierrors.NewBadRequest("sources/diff: name: the object's name is required"))
			return
		case k.Namespaced != (ns != ""):
			apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("sources/diff: namespace %q: %s are %snamespaced", ns, resource, map[bool]string{true: "", false: "not "}[k.Namespaced])))
			return
		}
		id, _ := auth.IdentityFromContext(r.Context())
		if err := authz.Authorize(r.Context(), id, auth.Attributes{Verb: auth.VerbGet, Kind: k, Namespace: ns, Name: name}); err != nil {
			apiserver.WriteError(w, apierrors.NewForbidden(schema.GroupResource{Group: k.GVK.Group, Resource: k.Resource}, name, err))
			return
		}
		key := apply.Key{Kind: k, Namespace: ns, Name: name}
		live, err := s.store.Get(k, ns, name)
		switch {
		case store.IsNotFound(err):
			live = nil
		case err != nil:
			apiserver.WriteError(w, err)
			return
		case live.GetAnnotations()[api.AnnotationSource] != src.Name:
			apiserver.WriteError(w, apierrors.NewNotFound(schema.GroupResource{Group: api.BerthV1.Group, Resource: "sources/diff"},
				fmt.Sprintf("%s: source %s did not apply it", key, src.Name)))
			return
		}
		want, rev, ok := s.applier.Declared(src.Name, key, live)
		if !ok {
			apiserver.WriteError(w, apierrors.NewNotFound(schema.GroupResource{Group: api.BerthV1.Group, Resource: "sources/diff"},
				fmt.Sprintf("%s: source %s applied no such object since the server started", key, src.Name)))
			return
		}
		text, err := diffLive(key, live, want, rev)
		if err != nil {
			apiserver.WriteError(w, apierrors.NewInternalError(err))
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("Berth-Revision", rev)
		_, _ = w.Write([]byte(text))
	}
}

// diffLive is the unified diff from live (nil: deleted) to want, as YAML
// without status and server-set metadata.
func diffLive(key apply.Key, live, want api.Object, rev string) (string, error) {
	from, err := diffYAML(key.Kind, live)
	if err != nil {
		return "", err
	}
	to, err := diffYAML(key.Kind, want)
	if err != nil {
		return "", err
	}
	if from == to {
		return "", nil
	}
	path := key.Kind.Resource + "/"
	if key.Namespace != "" {
		path += key.Namespace + "/"
	}
	path += key.Name
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(from), B: difflib.SplitLines(to),
		FromFile: "live/" + path, ToFile: "source@" + rev + "/" + path, Context: 3,
	})
}

// diffLeftOut are the metadata fields only the server writes.
var diffLeftOut = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds"}

// diffYAML is an object as a diff shows it.
func diffYAML(k *api.Kind, obj api.Object) (string, error) {
	if obj == nil {
		return "", nil
	}
	obj = obj.DeepCopyObject().(api.Object)
	obj.GetObjectKind().SetGroupVersionKind(k.GVK)
	data, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", err
	}
	delete(doc, "status")
	if m, ok := doc["metadata"].(map[string]any); ok {
		for _, f := range diffLeftOut {
			delete(m, f)
		}
		if ann, ok := m["annotations"].(map[string]any); ok {
			delete(ann, api.AnnotationLastAppliedConfig)
			if len(ann) == 0 {
				delete(m, "annotations")
			}
		}
	}
	if sec, ok := obj.(*api.Secret); ok {
		hidden := map[string]any{}
		for name, v := range sec.Data {
			hidden[name] = fmt.Sprintf("(hidden: %d bytes, sha256 %x)", len(v), sha256.Sum256(v))
		}
		delete(doc, "stringData")
		doc["data"] = hidden
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(out), "\n") + "\n", nil
}
