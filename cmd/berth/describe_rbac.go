package main

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/rbac"
)

func init() {
	describers["Role"] = describeRole
	describers["ClusterRole"] = describeRole
	describers["RoleBinding"] = describeBinding
	describers["ClusterRoleBinding"] = describeBinding
	for _, k := range []string{"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"} {
		withoutEvents[k] = true
	}
}

// describeRole prints a role as kubectl does: its rules broken down to one
// resource each, the verbs of the same resource and names together.
func describeRole(w *describeWriter, obj api.Object, _ *describeContext) {
	var rules []api.PolicyRule
	switch r := obj.(type) {
	case *api.Role:
		rules = r.Rules
	case *api.ClusterRole:
		rules = r.Rules
	}
	describeHeader(w, obj, false)
	w.write(level0, "PolicyRule:\n")
	w.write(level1, "Resources\tNon-Resource URLs\tResource Names\tVerbs\n")
	w.write(level1, "---------\t-----------------\t--------------\t-----\n")
	for _, r := range compactRules(rules) {
		w.write(level1, "%s\t%v\t%v\t%v\n", combineResourceGroup(r.Resources, r.APIGroups), r.NonResourceURLs, r.ResourceNames, r.Verbs)
	}
}

// compactRules breaks rules down to one resource (or path) each, the
// verbs of the same resource and names together, sorted as kubectl sorts
// them.
func compactRules(rules []api.PolicyRule) []rbacv1.PolicyRule {
	out := rbac.CompactRules(rbac.Rules(rules))
	slices.SortStableFunc(out, func(a, b rbacv1.PolicyRule) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// combineResourceGroup names a resource with its group, "deployments.apps"
// or "deployments.apps/scale".
func combineResourceGroup(resources, groups []string) string {
	if len(resources) == 0 {
		return ""
	}
	res, sub, hasSub := strings.Cut(resources[0], "/")
	if len(groups) > 0 && groups[0] != "" {
		res += "." + groups[0]
	}
	if hasSub {
		res += "/" + sub
	}
	return res
}

// describeBinding prints a binding as kubectl does: its role and its
// subjects.
func describeBinding(w *describeWriter, obj api.Object, _ *describeContext) {
	var (
		ref      api.RoleRef
		subjects []api.Subject
	)
	switch b := obj.(type) {
	case *api.RoleBinding:
		ref, subjects = b.RoleRef, b.Subjects
	case *api.ClusterRoleBinding:
		ref, subjects = b.RoleRef, b.Subjects
	}
	describeHeader(w, obj, false)
	w.write(level0, "Role:\n")
	w.write(level1, "Kind:\t%s\n", ref.Kind)
	w.write(level1, "Name:\t%s\n", ref.Name)
	w.write(level0, "Subjects:\n")
	w.write(level1, "Kind\tName\tNamespace\n")
	w.write(level1, "----\t----\t---------\n")
	for _, s := range subjects {
		w.write(level1, "%s\t%s\t%s\n", s.Kind, s.Name, s.Namespace)
	}
}
