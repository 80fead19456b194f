package apiserver

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/apiserver/rbac"
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
	pathAccessReview  = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
	pathRulesReview   = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
	pathSelfReview    = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	pathSubjectReview = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
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
	id, _ := auth.IdentityFromContext(r.Context())
	allowed, reason := s.accessReview(r, id, &review.Spec)
	review.TypeMeta = metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SelfSubjectAccessReview"}
	review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Denied: !allowed, Reason: reason}
	writeJSON(w, http.StatusCreated, &review)
}

// accessReview decides a review's question with the authorizer.
func (s *Server) accessReview(r *http.Request, id *auth.Identity, spec *authorizationv1.SelfSubjectAccessReviewSpec) (bool, string) {
	if id.Privileged() {
		return true, ""
	}
	ra := spec.ResourceAttributes
	if ra == nil {
		// A URL outside the API: the paths that need no token are open
		// to all for get; RBAC answers the rest.
		if spec.NonResourceAttributes == nil {
			return false, "the review names neither a resource nor a path"
		}
		na := spec.NonResourceAttributes
		if _, public := slices.BinarySearch(s.publicPaths(), na.Path); public && na.Verb == auth.VerbGet {
			return true, ""
		}
		return s.reviewRBAC(r, id, authorizer.AttributesRecord{User: id.UserInfo(), Verb: na.Verb, Path: na.Path})
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
	if id.Kind != auth.IdentityNode {
		// RBAC answers any resource, one berth does not serve and
		// wildcards included, as Kubernetes' does.
		a := authorizer.AttributesRecord{User: id.UserInfo(), Verb: ra.Verb, Namespace: ra.Namespace, APIGroup: ra.Group,
			APIVersion: ra.Version, Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name, ResourceRequest: true}
		if kind != nil && !kind.Namespaced {
			a.Namespace = ""
		}
		return s.reviewRBAC(r, id, a)
	}
	if kind == nil || ra.Verb == "*" || ra.Resource == "*" || ra.Group == "*" {
		return false, fmt.Sprintf("a node's permissions are decided object by object, on the resources berth serves; not on %q in group %q", ra.Resource, ra.Group)
	}
	a := auth.Attributes{Verb: ra.Verb, Kind: kind, Namespace: ra.Namespace, Name: ra.Name, Subresource: ra.Subresource}
	if !kind.Namespaced {
		a.Namespace = ""
	}
	if err := s.cfg.Authorizer.Authorize(r.Context(), id, a); err != nil {
		if fe, ok := err.(*auth.ForbiddenError); ok && fe.Reason != "" {
			return false, fe.Reason
		}
		return false, err.Error()
	}
	return true, ""
}

// RBACAuthorizer is an Authorizer with an RBAC authorizer in its chain,
// which the reviews ask directly about what berth does not serve.
type RBACAuthorizer interface {
	RBAC() *rbac.Authorizer
}

// reviewRBAC asks the chain's RBAC authorizer.
func (s *Server) reviewRBAC(r *http.Request, _ *auth.Identity, a authorizer.AttributesRecord) (bool, string) {
	ra, ok := s.cfg.Authorizer.(RBACAuthorizer)
	if !ok {
		return false, "the authorizer has no RBAC"
	}
	d, reason, err := ra.RBAC().Authorize(r.Context(), a)
	if err != nil {
		return false, err.Error()
	}
	if d != authorizer.DecisionAllow {
		return false, "RBAC: no role bound to the user or its groups grants it"
	}
	return true, reason
}

// RulesLister is an Authorizer that can say what an identity may do in a
// namespace as rules, for `kubectl auth can-i --list`. incomplete says the
// rules leave out what is decided object by object, and why.
type RulesLister interface {
	RulesFor(id *auth.Identity, namespace string) (rules []authorizationv1.ResourceRule, nonResource []authorizationv1.NonResourceRule, incomplete string)
}

// serveRulesReview answers a SelfSubjectRulesReview: what the caller may
// do in the namespace the review names.
func (s *Server) serveRulesReview(w http.ResponseWriter, r *http.Request) {
	var review authorizationv1.SelfSubjectRulesReview
	if err := readReview(r, &review, "SelfSubjectRulesReview"); err != nil {
		WriteError(w, err)
		return
	}
	id, _ := auth.IdentityFromContext(r.Context())
	review.TypeMeta = metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SelfSubjectRulesReview"}
	st := authorizationv1.SubjectRulesReviewStatus{}
	if id.Privileged() {
		st.ResourceRules = []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}
		st.NonResourceRules = []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}
	} else {
		var (
			rules  []authorizationv1.ResourceRule
			nonRes []authorizationv1.NonResourceRule
		)
		incomplete := "the authorizer cannot list its rules"
		if l, ok := s.cfg.Authorizer.(RulesLister); ok && id != nil {
			rules, nonRes, incomplete = l.RulesFor(id, review.Spec.Namespace)
		}
		st.ResourceRules = rules
		// The paths served without a token are open to every caller.
		st.NonResourceRules = append(nonRes, authorizationv1.NonResourceRule{Verbs: []string{auth.VerbGet}, NonResourceURLs: slices.Clone(s.publicPaths())})
		st.Incomplete, st.EvaluationError = incomplete != "", incomplete
	}
	review.Status = st
	writeJSON(w, http.StatusCreated, &review)
}

// serveSubjectAccessReview answers a SubjectAccessReview: whether the
// user and groups the review names may do something. Asking needs the
// create verb on subjectaccessreviews (cluster-admin has it), as in
// Kubernetes, since the answer tells what others may do.
func (s *Server) serveSubjectAccessReview(w http.ResponseWriter, r *http.Request) {
	var review authorizationv1.SubjectAccessReview
	if err := readReview(r, &review, "SubjectAccessReview"); err != nil {
		WriteError(w, err)
		return
	}
	caller, _ := auth.IdentityFromContext(r.Context())
	if err := s.cfg.Authorizer.Authorize(r.Context(), caller, auth.Attributes{Verb: auth.VerbCreate, Kind: subjectAccessReviewKind}); err != nil {
		WriteError(w, forbidden(subjectAccessReviewKind, "", err))
		return
	}
	spec := review.Spec
	if spec.User == "" && len(spec.Groups) == 0 {
		WriteError(w, apierrors.NewInvalid(schema.GroupKind{Group: "authorization.k8s.io", Kind: "SubjectAccessReview"}, "",
			field.ErrorList{field.Invalid(field.NewPath("spec", "user"), spec.User, "at least one of user or group must be specified")}))
		return
	}
	id := reviewedIdentity(spec.User, spec.Groups)
	allowed, reason := s.accessReview(r, id, &authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: spec.ResourceAttributes, NonResourceAttributes: spec.NonResourceAttributes})
	review.TypeMeta = metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SubjectAccessReview"}
	review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Denied: !allowed, Reason: reason}
	writeJSON(w, http.StatusCreated, &review)
}

// serveLocalSubjectAccessReview answers a LocalSubjectAccessReview: a
// SubjectAccessReview about one namespace, which who may create them in
// that namespace may ask (a namespace's admin, through the admin
// ClusterRole), with Kubernetes' checks of the namespace.
func (s *Server) serveLocalSubjectAccessReview(w http.ResponseWriter, r *http.Request, namespace string) {
	var review authorizationv1.LocalSubjectAccessReview
	if err := readReview(r, &review, "LocalSubjectAccessReview"); err != nil {
		WriteError(w, err)
		return
	}
	caller, _ := auth.IdentityFromContext(r.Context())
	if err := s.cfg.Authorizer.Authorize(r.Context(), caller, auth.Attributes{Verb: auth.VerbCreate, Kind: localSubjectAccessReviewKind, Namespace: namespace}); err != nil {
		WriteError(w, forbidden(localSubjectAccessReviewKind, "", err))
		return
	}
	if review.Namespace == "" {
		review.Namespace = namespace
	}
	if review.Namespace != namespace {
		WriteError(w, badRequest("spec.resourceAttributes.namespace must match namespace: %s", namespace))
		return
	}
	spec := review.Spec
	var errs field.ErrorList
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "user"), spec.User, "at least one of user or group must be specified"))
	}
	if spec.ResourceAttributes == nil && spec.NonResourceAttributes == nil {
		errs = append(errs, field.Required(field.NewPath("spec", "resourceAttributes"), "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	if spec.ResourceAttributes != nil && spec.ResourceAttributes.Namespace != review.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"), spec.ResourceAttributes.Namespace, "must match metadata.namespace"))
	}
	if spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nonResourceAttributes"), spec.NonResourceAttributes, "disallowed on this kind of request"))
	}
	if len(errs) > 0 {
		WriteError(w, apierrors.NewInvalid(schema.GroupKind{Group: "authorization.k8s.io", Kind: "LocalSubjectAccessReview"}, "", errs))
		return
	}
	id := reviewedIdentity(spec.User, spec.Groups)
	allowed, reason := s.accessReview(r, id, &authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: spec.ResourceAttributes})
	review.TypeMeta = metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "LocalSubjectAccessReview"}
	review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Denied: !allowed, Reason: reason}
	writeJSON(w, http.StatusCreated, &review)
}

// localSubjectAccessReviewKind names localsubjectaccessreviews for the
// authorizer, as subjectAccessReviewKind does.
var localSubjectAccessReviewKind = &api.Kind{GVK: authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview"), Resource: "localsubjectaccessreviews", Namespaced: true}

// localReviewNamespace returns the namespace of a path to the
// localsubjectaccessreviews of one.
func localReviewNamespace(segs []string) (string, bool) {
	if len(segs) == 6 && segs[0] == "apis" && segs[1] == "authorization.k8s.io" && segs[2] == "v1" &&
		segs[3] == "namespaces" && segs[5] == "localsubjectaccessreviews" {
		return segs[4], true
	}
	return "", false
}

// subjectAccessReviewKind names subjectaccessreviews for the authorizer;
// it is no kind berth stores.
var subjectAccessReviewKind = &api.Kind{GVK: authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"), Resource: "subjectaccessreviews"}

// reviewedIdentity is the identity a SubjectAccessReview names: a node
// or a service account by its user name, or a user with its groups.
func reviewedIdentity(name string, groups []string) *auth.Identity {
	if node, ok := strings.CutPrefix(name, auth.NodeUserPrefix); ok && slices.Contains(groups, auth.GroupNodes) {
		return auth.NodeIdentity(node)
	}
	id := auth.UserIdentity(name, groups)
	if ns, _, ok := auth.SplitServiceAccountUserName(name); ok && id.Kind == auth.IdentityUser {
		id.Kind, id.Namespace = auth.IdentityServiceAccount, ns
	}
	return id
}

// serveSelfReview answers a SelfSubjectReview with the caller's identity.
func (s *Server) serveSelfReview(w http.ResponseWriter, r *http.Request) {
	var review authenticationv1.SelfSubjectReview
	if err := readReview(r, &review, "SelfSubjectReview"); err != nil {
		WriteError(w, err)
		return
	}
	id, ok := auth.IdentityFromContext(r.Context())
	if !ok {
		WriteError(w, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	review.TypeMeta = metav1.TypeMeta{APIVersion: authenticationv1.SchemeGroupVersion.String(), Kind: "SelfSubjectReview"}
	review.Status.UserInfo = authenticationv1.UserInfo{Username: id.Name, Groups: id.Groups}
	writeJSON(w, http.StatusCreated, &review)
}
