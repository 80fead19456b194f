package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/apiserver/patch"
)

// The scale subresource (autoscaling/v1 Scale) of Deployments, ReplicaSets,
// StatefulSets and ReplicationControllers is what `kubectl scale` reads and patches. A
// write to it changes spec.replicas and nothing else, through the same
// admission chain as any update.

// scaleGVK is the kind of a scale subresource.
var scaleGVK = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// scaleObject is autoscaling/v1 Scale.
type scaleObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Replicas int32 `json:"replicas"`
	} `json:"spec"`
	Status struct {
		Replicas int32  `json:"replicas"`
		Selector string `json:"selector,omitempty"`
	} `json:"status"`
}

// scalable reports whether a kind has the scale subresource: a custom
// kind when its CRD gives it one.
func scalable(k *api.Kind) bool {
	if k.Custom {
		return customScale(k) != nil
	}
	return api.Scalable(k)
}

// customScale is the scale subresource of a custom kind's stored
// version, or nil.
func customScale(k *api.Kind) *apiextensionsv1.CustomResourceSubresourceScale {
	if v := api.CRDVersion(k.CRD, k.GVK.Version); v != nil && v.Subresources != nil {
		return v.Subresources.Scale
	}
	return nil
}

// jsonFields splits a CRD's path (".spec.replicas") into its fields.
func jsonFields(path string) []string {
	return strings.Split(strings.TrimPrefix(path, "."), ".")
}

// setCustomReplicas sets the replicas of a custom object at its CRD's
// specReplicasPath.
func setCustomReplicas(u *unstructured.Unstructured, n int32) error {
	k := api.KindOf(u)
	sc := customScale(k)
	if sc == nil {
		return notFoundPath()
	}
	return unstructured.SetNestedField(u.Object, int64(n), jsonFields(sc.SpecReplicasPath)...)
}

func scaleOf(obj api.Object) *scaleObject {
	sc := &scaleObject{TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"}}
	sc.Name, sc.Namespace = obj.GetName(), obj.GetNamespace()
	sc.UID, sc.ResourceVersion = obj.GetUID(), obj.GetResourceVersion()
	sc.CreationTimestamp = obj.GetCreationTimestamp()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if spec := customScale(api.KindOf(u)); spec != nil {
			n, _, _ := unstructured.NestedInt64(u.Object, jsonFields(spec.SpecReplicasPath)...)
			sc.Spec.Replicas = int32(n)
			n, _, _ = unstructured.NestedInt64(u.Object, jsonFields(spec.StatusReplicasPath)...)
			sc.Status.Replicas = int32(n)
			if spec.LabelSelectorPath != nil {
				sc.Status.Selector, _, _ = unstructured.NestedString(u.Object, jsonFields(*spec.LabelSelectorPath)...)
			}
		}
		return sc
	}
	if r, _ := api.ReplicasField(obj); r != nil && *r != nil {
		sc.Spec.Replicas = **r
	}
	sc.Status.Replicas, sc.Status.Selector = api.ScaleStatus(obj)
	return sc
}

// serveScale answers GET, PUT and PATCH on …/{name}/scale.
func (s *Server) serveScale(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	if req.verb == auth.VerbGet {
		if err := s.readLatest(r.Context(), r.URL.Query()); err != nil {
			WriteError(w, err)
			return
		}
		obj, err := s.store.Get(req.kind, req.namespace, req.name)
		if err != nil {
			if authErr := s.authorize(r, req, nil, nil); authErr != nil {
				err = authErr
			}
			WriteError(w, err)
			return
		}
		if err := s.authorize(r, req, nil, obj); err != nil {
			WriteError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, scaleOf(obj))
		return
	}
	var apply func(doc, patch []byte) ([]byte, error)
	if req.verb == auth.VerbPatch {
		switch ct := contentType(r); ct {
		case mediaMergePatch:
			apply = patch.Merge
		case mediaStrategicPatch:
			apply = func(doc, body []byte) ([]byte, error) {
				meta, err := patch.SchemaOf(scaleGVK, &scaleObject{})
				if err != nil {
					return nil, err
				}
				return patch.Strategic(doc, body, meta)
			}
		case mediaJSONPatch:
			apply = patch.JSON
		default:
			WriteError(w, unsupportedMediaType(ct, mediaMergePatch, mediaStrategicPatch, mediaJSONPatch))
			return
		}
	} else if err := checkObjectContentType(r); err != nil {
		WriteError(w, err)
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		WriteError(w, err)
		return
	}
	decode := func(data []byte) (*scaleObject, error) {
		var sc scaleObject
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sc); err != nil {
			return nil, badRequest("the body is not an autoscaling/v1 Scale: %v", err)
		}
		if sc.Name != "" && sc.Name != req.name {
			return nil, nameMismatch("name", sc.Name, req.name)
		}
		return &sc, nil
	}
	conditional := false
	if apply == nil {
		sc, err := decode(body)
		if err != nil {
			WriteError(w, err)
			return
		}
		conditional = sc.ResourceVersion != ""
	} else {
		conditional = patchSetsResourceVersion(contentType(r), body)
	}
	out, err := s.update(r, req, conditional, func(old api.Object) (api.Object, error) {
		data := body
		if apply != nil {
			doc, err := json.Marshal(scaleOf(old))
			if err != nil {
				return nil, err
			}
			if data, err = apply(doc, body); err != nil {
				return nil, err
			}
		}
		sc, err := decode(data)
		if err != nil {
			return nil, err
		}
		obj := old.DeepCopyObject().(api.Object)
		n := sc.Spec.Replicas
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if err := setCustomReplicas(u, n); err != nil {
				return nil, err
			}
		} else {
			r, _ := api.ReplicasField(obj)
			*r = &n
		}
		obj.SetResourceVersion(sc.ResourceVersion)
		return obj, nil
	})
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, scaleOf(out))
}
