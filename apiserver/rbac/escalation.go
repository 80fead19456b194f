package rbac

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/berth-dev/berth/api"
)

// fullAuthority is cluster-admin's: what setting an aggregationRule
// needs, since it can gather anything.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{rbacv1.VerbAll}, APIGroups: []string{rbacv1.APIGroupAll}, Resources: []string{rbacv1.ResourceAll}},
	{Verbs: []string{rbacv1.VerbAll}, NonResourceURLs: []string{rbacv1.NonResourceAll}},
}

// ConfirmNoEscalation refuses rules the user does not hold in namespace,
// with Kubernetes' message listing the rules it lacks.
func (ix *Index) ConfirmNoEscalation(u user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	owner := ix.RulesFor(u, namespace)
	ok, missing := validation.Covers(owner, rules)
	if ok {
		return nil
	}
	descs := make([]string, 0, len(missing))
	for _, m := range CompactRules(missing) {
		descs = append(descs, CompactString(m))
	}
	slices.Sort(descs)
	descs = slices.Compact(descs)
	return fmt.Errorf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.GetName(), u.GetGroups(), strings.Join(descs, "\n"))
}

// CompactRules breaks rules down to one group, resource, name or path
// each and joins again the verbs of those that differ in nothing else,
// as Kubernetes' CompactRules does for its messages and kubectl describe
// for its table.
func CompactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	at := map[string]int{}
	for _, rule := range rules {
		for _, r := range validation.BreakdownRule(rule) {
			key := fmt.Sprint(r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs)
			if i, ok := at[key]; ok {
				if !slices.Contains(out[i].Verbs, r.Verbs[0]) {
					out[i].Verbs = append(out[i].Verbs, r.Verbs[0])
				}
				continue
			}
			at[key] = len(out)
			out = append(out, r)
		}
	}
	return out
}

// ErrEscalation is wrapped by every refusal of CheckWrite.
var ErrEscalation = errors.New("rbac escalation")

// CheckWrite is the escalation check of Kubernetes' RBAC registry on a
// create or update of a Role, ClusterRole, RoleBinding or
// ClusterRoleBinding: a role's rules must be held already by its author
// unless the author may "escalate" roles; a binding's role must be held
// unless the author may "bind" it; an aggregationRule needs
// cluster-admin's authority. old is the stored object on update: an
// update that changes neither rules nor roleRef passes. Members of
// system:masters are not asked. A refusal wraps ErrEscalation.
func (ix *Index) CheckWrite(u user.Info, obj, old api.Object) error {
	if slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		return nil
	}
	allowed := func(verb, resource, namespace, name string) bool {
		d, _, _ := ix.Authorize(authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: api.RBACGroup,
			Resource: resource, Namespace: namespace, Name: name, ResourceRequest: true})
		return d == authorizer.DecisionAllow
	}
	fail := func(err error) error { return fmt.Errorf("%w: %w", ErrEscalation, err) }
	switch o := obj.(type) {
	case *api.Role:
		if p, ok := old.(*api.Role); ok && equalRules(p.Rules, o.Rules) {
			return nil
		}
		if allowed("escalate", "roles", o.Namespace, o.Name) {
			return nil
		}
		if err := ix.ConfirmNoEscalation(u, o.Namespace, Rules(o.Rules)); err != nil {
			return fail(err)
		}
	case *api.ClusterRole:
		if p, ok := old.(*api.ClusterRole); ok && equalRules(p.Rules, o.Rules) && equalAggregation(p.AggregationRule, o.AggregationRule) {
			return nil
		}
		if allowed("escalate", "clusterroles", "", o.Name) {
			return nil
		}
		if o.AggregationRule != nil {
			if err := ix.ConfirmNoEscalation(u, "", fullAuthority); err != nil {
				return fail(errors.New("must have cluster-admin privileges to use the aggregationRule"))
			}
		}
		if err := ix.ConfirmNoEscalation(u, "", Rules(o.Rules)); err != nil {
			return fail(err)
		}
	case *api.RoleBinding:
		if p, ok := old.(*api.RoleBinding); ok && p.RoleRef == o.RoleRef {
			return nil
		}
		return ix.checkBind(u, o.Namespace, o.RoleRef, allowed)
	case *api.ClusterRoleBinding:
		if p, ok := old.(*api.ClusterRoleBinding); ok && p.RoleRef == o.RoleRef {
			return nil
		}
		return ix.checkBind(u, "", o.RoleRef, allowed)
	}
	return nil
}

// checkBind: the author may bind the role (the "bind" verb on it), or
// holds every rule of it in the binding's namespace.
func (ix *Index) checkBind(u user.Info, namespace string, ref api.RoleRef, allowed func(verb, resource, namespace, name string) bool) error {
	resource := "clusterroles"
	if ref.Kind == api.RoleRefRole {
		resource = "roles"
	}
	if allowed("bind", resource, namespace, ref.Name) {
		return nil
	}
	rules, role, ok := ix.RoleRules(namespace, ref)
	if !ok {
		return fmt.Errorf("%w: %s not found", ErrEscalation, role)
	}
	if err := ix.ConfirmNoEscalation(u, namespace, rules); err != nil {
		return fmt.Errorf("%w: %w", ErrEscalation, err)
	}
	return nil
}

func equalRules(a, b []api.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y api.PolicyRule) bool {
		return slices.Equal(x.Verbs, y.Verbs) && slices.Equal(x.APIGroups, y.APIGroups) && slices.Equal(x.Resources, y.Resources) &&
			slices.Equal(x.ResourceNames, y.ResourceNames) && slices.Equal(x.NonResourceURLs, y.NonResourceURLs)
	})
}

func equalAggregation(a, b *api.AggregationRule) bool {
	if a == nil || b == nil {
		return a == b
	}
	return fmt.Sprint(a.ClusterRoleSelectors) == fmt.Sprint(b.ClusterRoleSelectors)
}
