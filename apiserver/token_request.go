package apiserver

import (
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/store"
)

// Bounds of a requested token lifetime, Kubernetes' own: at least ten
// minutes, and no longer than the default here.
const (
	minTokenTTL  = 10 * time.Minute
	maxTokenBody = 64 << 10
)

var (
	podKind               = api.MustLookupResource("pods")
	tokenRequestGroupKind = schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}
	tokenRequestTypeMeta  = metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"}
)

// invalidTokenRequest is the 422 of a TokenRequest with a bad field.
func invalidTokenRequest(name, path string, value any, msg string) error {
	return apierrors.NewInvalid(tokenRequestGroupKind, name, field.ErrorList{field.Invalid(field.NewPath(path), value, msg)})
}

// TokenRequestHandler serves POST …/serviceaccounts/{name}/token: a signed
// token for the service account, bound to a pod when the request names
// one (the agent asks for each pod it runs). The server has authorized
// "create serviceaccounts/token" before it is called.
func TokenRequestHandler(st *store.Store, s *auth.Signer) SubresourceHandler {
	return func(w http.ResponseWriter, r *http.Request, obj api.Object) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			WriteError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "serviceaccounts/token"}, r.Method))
			return
		}
		sa, ok := obj.(*api.ServiceAccount)
		if !ok {
			WriteError(w, apierrors.NewBadRequest("token: not a service account"))
			return
		}
		var req api.TokenRequest
		if err := decodeSmallBody(r, maxTokenBody, &req, "TokenRequest"); err != nil {
			WriteError(w, err)
			return
		}
		ttl := auth.DefaultServiceAccountTokenTTL
		if e := req.Spec.ExpirationSeconds; e != nil {
			// Compared in seconds: a large value would overflow a Duration.
			if *e < int64(minTokenTTL/time.Second) {
				WriteError(w, invalidTokenRequest(sa.Name, "spec.expirationSeconds", *e,
					fmt.Sprintf("may not specify a duration less than %d seconds", int(minTokenTTL.Seconds()))))
				return
			}
			ttl = time.Duration(min(*e, int64(auth.DefaultServiceAccountTokenTTL/time.Second))) * time.Second
		}
		var pod *api.Pod
		id, _ := auth.IdentityFromContext(r.Context())
		byNode := id != nil && id.Node != ""
		// A node asks only for tokens bound to one of its pods, by uid, as
		// Kubernetes' NodeRestriction has it: an unbound token would
		// outlive every pod of the node.
		if ref := req.Spec.BoundObjectRef; byNode && (ref == nil || ref.Name == "") {
			WriteError(w, apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts/token"}, sa.Name,
				fmt.Errorf("node %q may only ask for tokens bound to a pod", id.Node)))
			return
		} else if byNode && ref.UID == "" {
			WriteError(w, apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts/token"}, sa.Name,
				fmt.Errorf("node %q asked for a token bound to pod %s without its uid", id.Node, ref.Name)))
			return
		}
		if ref := req.Spec.BoundObjectRef; ref != nil {
			if ref.Kind != "Pod" {
				WriteError(w, invalidTokenRequest(sa.Name, "spec.boundObjectRef.kind", ref.Kind, "only Pod is supported"))
				return
			}
			o, err := st.Get(podKind, sa.Namespace, ref.Name)
			if err != nil {
				WriteError(w, err)
				return
			}
			pod = o.(*api.Pod)
			// A node gets tokens only for the pods bound to it, as
			// Kubernetes' NodeRestriction admission has it.
			if byNode && pod.Spec.NodeName != id.Node {
				WriteError(w, apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts/token"}, sa.Name,
					fmt.Errorf("node %q may only ask for tokens bound to its own pods; pod %s is not bound to it", id.Node, ref.Name)))
				return
			}
			// A mirror pod runs nothing the control plane gave the node:
			// the node wrote it, and it gets no token.
			if byNode && auth.IsMirrorPod(pod) {
				WriteError(w, apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts/token"}, sa.Name,
					fmt.Errorf("node %q may not ask for tokens bound to mirror pod %s", id.Node, ref.Name)))
				return
			}
			if ref.UID != "" && string(pod.UID) != ref.UID {
				WriteError(w, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, ref.Name,
					fmt.Errorf("the UID in the bound object reference (%s) does not match the pod's (%s)", ref.UID, pod.UID)))
				return
			}
		}
		for i, a := range req.Spec.Audiences {
			if a == "" {
				WriteError(w, invalidTokenRequest(sa.Name, fmt.Sprintf("spec.audiences[%d]", i), a, "must not be empty"))
				return
			}
		}
		if len(req.Spec.Audiences) == 0 {
			req.Spec.Audiences = s.Audiences()
		}
		tok, err := s.IssueAudienceToken(sa, pod, req.Spec.Audiences, ttl)
		if err != nil {
			WriteError(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		req.TypeMeta = tokenRequestTypeMeta
		req.Name, req.Namespace = sa.Name, sa.Namespace
		req.Status = api.TokenRequestStatus{Token: tok, ExpirationTimestamp: metav1.NewTime(s.Now().Add(ttl).Truncate(time.Second))}
		writeJSON(w, http.StatusCreated, &req)
	}
}
