package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
)

// The scale subresource (autoscaling/v1 Scale) of Deployments, ReplicaSets,
// StatefulSets and ReplicationControllers is what `kubectl scale` reads and patches. A
// write to it changes spec.replicas and nothing else, through the same
// admission chain as any update.

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

// replicasField returns the spec.replicas of a scalable object, and false
// for other kinds.
func replicasField(obj api.Object) (**int32, bool) {
	switch o := obj.(type) {
	case *api.Deployment:
		return &o.Spec.Replicas, true
	case *api.ReplicaSet:
		return &o.Spec.Replicas, true
	case *api.StatefulSet:
		return &o.Spec.Replicas, true
	case *api.ReplicationController:
		return &o.Spec.Replicas, true
	}
	return nil, false
}

// scalable reports whether a kind has the scale subresource.
func scalable(k *api.Kind) bool {
	_, ok := replicasField(k.New())
	return ok
}

func scaleOf(obj api.Object) *scaleObject {
	sc := &scaleObject{TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"}}
	sc.Name, sc.Namespace = obj.GetName(), obj.GetNamespace()
	sc.UID, sc.ResourceVersion = obj.GetUID(), obj.GetResourceVersion()
	sc.CreationTimestamp = obj.GetCreationTimestamp()
	if r, _ := replicasField(obj); r != nil && *r != nil {
		sc.Spec.Replicas = **r
	}
	switch o := obj.(type) {
	case *api.Deployment:
		sc.Status.Replicas = o.Status.Replicas
		sc.Status.Selector = selectorString(o.Spec.Selector)
	case *api.ReplicaSet:
		sc.Status.Replicas = o.Status.Replicas
		sc.Status.Selector = selectorString(o.Spec.Selector)
	case *api.StatefulSet:
		sc.Status.Replicas = o.Status.Replicas
		sc.Status.Selector = selectorString(o.Spec.Selector)
	case *api.ReplicationController:
		sc.Status.Replicas = o.Status.Replicas
		sc.Status.Selector = labels.SelectorFromSet(o.Spec.Selector).String()
	}
	return sc
}

func selectorString(ls *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return ""
	}
	return sel.String()
}

// serveScale answers GET, PUT and PATCH on …/{name}/scale.
func (s *Server) serveScale(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	if req.verb == VerbGet {
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
	if req.verb == VerbPatch {
		switch ct := contentType(r); ct {
		case mediaMergePatch:
			apply = mergePatch
		case mediaStrategicPatch:
			apply = strategicMergePatch
		case mediaJSONPatch:
			apply = jsonPatch
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
		r, _ := replicasField(obj)
		n := sc.Spec.Replicas
		*r = &n
		obj.SetResourceVersion(sc.ResourceVersion)
		return obj, nil
	})
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, scaleOf(out))
}
