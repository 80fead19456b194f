package apiserver

import (
	"fmt"
	"net/http"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// `kubectl auth can-i` asks whether the caller may do something, with a
// SelfSubjectAccessReview, `kubectl auth can-i --list` what it may do,
// with a SelfSubjectRulesReview, and `kubectl auth whoami` who the caller
// is, with a SelfSubjectReview. Both are created and answered at once, never
// stored; any caller may ask about itself, as Kubernetes lets every
// authenticated user. The answer comes from the same authorizer that
// judges real requests, so it is right about berth's fixed policy.

// Paths of the review resources.
const (
	pathAccessReview = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
	pathRulesReview  = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
	pathSelfReview   = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
)

// maxReviewBody bounds a review's body.
const maxReviewBody = 64 << 10

// readReview reads a review posted to its path.
func readReview(r *http.Request, into any, kind string) error {
	if r.Method != http.MethodPost {
		return methodNotAllowed(nil, r.Method)
	}
	return decodeSmallBody(r, maxReviewBody, into, kind)
}

// serveAccessReview answers a SelfSubjectAccessReview.
func (s *Server) serveAccessReview(w http.ResponseWriter, r *http.Request) {
	var review authorizationv1.SelfSubjectAccessReview
	if err := readReview(r, &review, "SelfSubjectAccessReview"); err != nil {
		WriteError(w, err)
		return
	}
	id, _ := IdentityFromContext(r.Context())
	allowed, reason := s.accessReview(r, id, &review.Spec)
	review.TypeMeta = metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SelfSubjectAccessReview"}
	review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Denied: !allowed, Reason: reason}
	writeJSON(w, http.StatusCreated, &review)
}

// accessReview decides a review's question with the authorizer.
func (s *Server) accessReview(r *http.Request, id *Identity, spec *authorizationv1.SelfSubjectAccessReviewSpec) (bool, string) {
	admin := id != nil && id.Kind == IdentityAdmin
	ra := spec.ResourceAttributes
	if ra == nil {
		// A URL outside the API: the admin may ask for any; the paths
		// that need no token are open to all.
		if spec.NonResourceAttributes == nil {
			return false, "the review names neither a resource nor a path"
		}
		na := spec.NonResourceAttributes
		_, public := slices.BinarySearch(s.publicPaths(), na.Path)
		switch {
		case admin, public && na.Verb == VerbGet:
			return true, ""
		case public:
			return false, na.Path + " is open to get only"
		}
		return false, "only the admin may use paths outside the API"
	}
	if ra.Verb == "*" || ra.Resource == "*" || ra.Group == "*" {
		if admin {
			return true, ""
		}
		return false, "berth answers wildcards for the admin only"
	}
	var kind *api.Kind
	for _, k := range api.Kinds() {
		if k.GVK.Group == ra.Group && k.Resource == ra.Resource {
			kind = k
			break
		}
	}
	if ra.Group == MetricsGroupVersion.Group && ra.Subresource == "" {
		kind = MetricsKind(ra.Resource)
	}
	if kind == nil {
		if admin {
			return true, "" // the admin may do everything, as cluster-admin
		}
		return false, fmt.Sprintf("berth serves no resource %q in group %q", ra.Resource, ra.Group)
	}
	a := Attributes{Verb: ra.Verb, Kind: kind, Namespace: ra.Namespace, Name: ra.Name, Subresource: ra.Subresource}
	if !kind.Namespaced {
		a.Namespace = ""
	}
	if err := s.cfg.Authorizer.Authorize(r.Context(), id, a); err != nil {
		if fe, ok := err.(*ForbiddenError); ok && fe.Reason != "" {
			return false, fe.Reason
		}
		return false, err.Error()
	}
	return true, ""
}

// RulesLister is an Authorizer that can say what an identity may do in a
// namespace as rules, for `kubectl auth can-i --list`. incomplete says the
// rules leave out what is decided object by object, and why.
type RulesLister interface {
	RulesFor(id *Identity, namespace string) (rules []authorizationv1.ResourceRule, incomplete string)
}

// selfReviewRules are what every authenticated caller may do, as
// Kubernetes' system:basic-user gives it: the reviews about itself. The
// paths registered with HandlePublic come beside them.
var selfReviewRules = []authorizationv1.ResourceRule{
	{Verbs: []string{VerbCreate}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
	{Verbs: []string{VerbCreate}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}},
}

// serveRulesReview answers a SelfSubjectRulesReview: what the caller may
// do in the namespace the review names.
func (s *Server) serveRulesReview(w http.ResponseWriter, r *http.Request) {
	var review authorizationv1.SelfSubjectRulesReview
	if err := readReview(r, &review, "SelfSubjectRulesReview"); err != nil {
		WriteError(w, err)
		return
	}
	id, _ := IdentityFromContext(r.Context())
	review.TypeMeta = metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SelfSubjectRulesReview"}
	st := authorizationv1.SubjectRulesReviewStatus{}
	if id != nil && id.Kind == IdentityAdmin {
		st.ResourceRules = []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}
		st.NonResourceRules = []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}
	} else {
		var rules []authorizationv1.ResourceRule
		incomplete := "the authorizer cannot list its rules"
		if l, ok := s.cfg.Authorizer.(RulesLister); ok && id != nil {
			rules, incomplete = l.RulesFor(id, review.Spec.Namespace)
		}
		st.ResourceRules = append(append(st.ResourceRules, selfReviewRules...), rules...)
		st.NonResourceRules = []authorizationv1.NonResourceRule{{Verbs: []string{VerbGet}, NonResourceURLs: slices.Clone(s.publicPaths())}}
		st.Incomplete, st.EvaluationError = incomplete != "", incomplete
	}
	review.Status = st
	writeJSON(w, http.StatusCreated, &review)
}

// serveSelfReview answers a SelfSubjectReview with the caller's identity.
func (s *Server) serveSelfReview(w http.ResponseWriter, r *http.Request) {
	var review authenticationv1.SelfSubjectReview
	if err := readReview(r, &review, "SelfSubjectReview"); err != nil {
		WriteError(w, err)
		return
	}
	id, ok := IdentityFromContext(r.Context())
	if !ok {
		WriteError(w, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	review.TypeMeta = metav1.TypeMeta{APIVersion: authenticationv1.SchemeGroupVersion.String(), Kind: "SelfSubjectReview"}
	review.Status.UserInfo = authenticationv1.UserInfo{Username: id.Name, Groups: groupsOf(id)}
	writeJSON(w, http.StatusCreated, &review)
}

// groupsOf names the groups Kubernetes would put an identity in.
func groupsOf(id *Identity) []string {
	switch id.Kind {
	case IdentityAdmin:
		return []string{"system:masters", "system:authenticated"}
	case IdentityNode:
		return []string{"system:nodes", "system:authenticated"}
	case IdentityServiceAccount:
		return []string{"system:serviceaccounts", "system:serviceaccounts:" + id.Namespace, "system:authenticated"}
	}
	return []string{"system:authenticated"}
}
