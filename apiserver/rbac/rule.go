package rbac

import (
	"strconv"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/berth-dev/berth/api"
)

// The matching below is Kubernetes' (plugin/pkg/auth/authorizer/rbac):
// "*" matches every verb, group, resource and path; "*/status" one
// subresource of every resource; a path ending in "*" every path under
// it; resourceNames limit a rule to the requests that name an object.

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

func resourceMatches(rule *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll || r == combined {
			return true
		}
		if subresource != "" && len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}

// RuleAllows reports whether one rule grants a request.
func RuleAllows(a authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !a.IsResourceRequest() {
		return verbMatches(rule, a.GetVerb()) && nonResourceURLMatches(rule, a.GetPath())
	}
	combined := a.GetResource()
	if sub := a.GetSubresource(); sub != "" {
		combined += "/" + sub
	}
	return verbMatches(rule, a.GetVerb()) &&
		apiGroupMatches(rule, a.GetAPIGroup()) &&
		resourceMatches(rule, combined, a.GetSubresource()) &&
		resourceNameMatches(rule, a.GetName())
}

// Rules converts berth's rules to k8s.io/api's, which have the same
// fields in the same order.
func Rules(in []api.PolicyRule) []rbacv1.PolicyRule {
	if in == nil {
		return nil
	}
	out := make([]rbacv1.PolicyRule, len(in))
	for i, r := range in {
		out[i] = rbacv1.PolicyRule(r)
	}
	return out
}

// FromRules converts k8s.io/api's rules to berth's.
func FromRules(in []rbacv1.PolicyRule) []api.PolicyRule {
	if in == nil {
		return nil
	}
	out := make([]api.PolicyRule, len(in))
	for i, r := range in {
		out[i] = api.PolicyRule(r)
	}
	return out
}

// CompactString prints a rule as Kubernetes' escalation message does:
// {APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}.
func CompactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, v []string) {
		if len(v) > 0 {
			parts = append(parts, name+":"+quoteList(v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}

// quoteList is fmt's %q of a []string: ["a" "b"].
func quoteList(v []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range v {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(s))
	}
	b.WriteByte(']')
	return b.String()
}
