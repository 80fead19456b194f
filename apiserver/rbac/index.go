package rbac

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Kinds of the RBAC objects.
var (
	RoleKind               = api.KindOf(&api.Role{})
	ClusterRoleKind        = api.KindOf(&api.ClusterRole{})
	RoleBindingKind        = api.KindOf(&api.RoleBinding{})
	ClusterRoleBindingKind = api.KindOf(&api.ClusterRoleBinding{})
	// Kinds are the four, in the order an index reads them.
	Kinds = []*api.Kind{RoleKind, ClusterRoleKind, RoleBindingKind, ClusterRoleBindingKind}
)

// subjectKey is a user name or a group name a binding grants to. A
// ServiceAccount subject is the user name of the account, as Kubernetes
// matches it (system:serviceaccount:NS:NAME).
type subjectKey struct {
	group bool
	name  string
}

// grant is what one binding grants: the rules of its role, shared with
// every other binding of that role, and where they came from, for
// messages and the rules review.
type grant struct {
	rules   []rbacv1.PolicyRule
	binding string // "RoleBinding ns/name" or "ClusterRoleBinding name"
	role    string // "Role ns/name" or "ClusterRole name"
}

// Index is an immutable view of the RBAC objects of one snapshot, keyed
// by subject: a check looks up the user's name and each of its groups
// among the cluster-wide grants and among those of the request's
// namespace, and walks only the rules those grants hold.
type Index struct {
	cluster    map[subjectKey][]*grant
	namespaces map[string]map[subjectKey][]*grant
	// roles and clusterRoles resolve role references, for the escalation
	// check of a binding.
	roles        map[string][]rbacv1.PolicyRule // "ns/name"
	clusterRoles map[string][]rbacv1.PolicyRule
	// missing records bindings whose role does not exist, as Kubernetes'
	// resolver reports them.
	missing []string
}

// BuildIndex reads the RBAC objects of a snapshot.
func BuildIndex(snap *store.Snapshot) (*Index, error) {
	ix := &Index{
		cluster:      map[subjectKey][]*grant{},
		namespaces:   map[string]map[subjectKey][]*grant{},
		roles:        map[string][]rbacv1.PolicyRule{},
		clusterRoles: map[string][]rbacv1.PolicyRule{},
	}
	err := snap.Each(RoleKind, store.Filter{}, func(o api.Object) bool {
		r := o.(*api.Role)
		ix.roles[r.Namespace+"/"+r.Name] = Rules(r.Rules)
		return true
	})
	if err == nil {
		err = snap.Each(ClusterRoleKind, store.Filter{}, func(o api.Object) bool {
			r := o.(*api.ClusterRole)
			ix.clusterRoles[r.Name] = Rules(r.Rules)
			return true
		})
	}
	// One grant per role and binding namespace, shared by the bindings.
	grants := map[string]*grant{}
	if err == nil {
		err = snap.Each(ClusterRoleBindingKind, store.Filter{}, func(o api.Object) bool {
			b := o.(*api.ClusterRoleBinding)
			g := ix.grant(grants, "", b.RoleRef, "ClusterRoleBinding "+b.Name)
			if g != nil {
				ix.add(ix.cluster, b.Subjects, "", g)
			}
			return true
		})
	}
	if err == nil {
		err = snap.Each(RoleBindingKind, store.Filter{}, func(o api.Object) bool {
			b := o.(*api.RoleBinding)
			g := ix.grant(grants, b.Namespace, b.RoleRef, "RoleBinding "+b.Namespace+"/"+b.Name)
			if g == nil {
				return true
			}
			m := ix.namespaces[b.Namespace]
			if m == nil {
				m = map[subjectKey][]*grant{}
				ix.namespaces[b.Namespace] = m
			}
			ix.add(m, b.Subjects, b.Namespace, g)
			return true
		})
	}
	if err != nil {
		return nil, fmt.Errorf("rbac: %w", err)
	}
	return ix, nil
}

// grant resolves a binding's role; nil when the role does not exist.
func (ix *Index) grant(grants map[string]*grant, namespace string, ref api.RoleRef, binding string) *grant {
	rules, role, ok := ix.RoleRules(namespace, ref)
	if !ok {
		ix.missing = append(ix.missing, fmt.Sprintf("%s: %s not found", binding, role))
		return nil
	}
	key := namespace + "\x00" + role
	g := grants[key]
	if g == nil {
		g = &grant{rules: rules, role: role}
		grants[key] = g
	}
	// The binding named is the first that granted the role; a message
	// needs one, not all.
	if g.binding == "" {
		g.binding = binding
	}
	return g
}

// RoleRules returns the rules a roleRef names (a Role in namespace, or a
// ClusterRole), how to name the role in a message, and false when it does
// not exist.
func (ix *Index) RoleRules(namespace string, ref api.RoleRef) ([]rbacv1.PolicyRule, string, bool) {
	if ref.Kind == api.RoleRefRole {
		rules, ok := ix.roles[namespace+"/"+ref.Name]
		return rules, "role.rbac.authorization.k8s.io " + namespace + "/" + ref.Name, ok
	}
	rules, ok := ix.clusterRoles[ref.Name]
	return rules, "clusterrole.rbac.authorization.k8s.io " + ref.Name, ok
}

func (ix *Index) add(m map[subjectKey][]*grant, subjects []api.Subject, namespace string, g *grant) {
	for _, s := range subjects {
		var k subjectKey
		switch s.Kind {
		case api.SubjectUser:
			k = subjectKey{name: s.Name}
		case api.SubjectGroup:
			k = subjectKey{group: true, name: s.Name}
		case api.SubjectServiceAccount:
			ns := s.Namespace
			if ns == "" {
				ns = namespace
			}
			if ns == "" {
				continue
			}
			k = subjectKey{name: serviceaccount.MakeUsername(ns, s.Name)}
		default:
			continue
		}
		// A subject named twice in one binding, or bound twice to one
		// role, is walked once.
		if l := m[k]; len(l) > 0 && l[len(l)-1] == g {
			continue
		}
		m[k] = append(m[k], g)
	}
}

// visit calls fn with each grant that applies to a user and groups in a
// namespace ("" for cluster-scoped requests and paths): the cluster-wide
// ones first. It stops when fn returns false.
func (ix *Index) visit(user string, groups []string, namespace string, fn func(*grant) bool) {
	maps := [2]map[subjectKey][]*grant{ix.cluster, nil}
	if namespace != "" {
		maps[1] = ix.namespaces[namespace]
	}
	for _, m := range maps {
		if len(m) == 0 {
			continue
		}
		for _, g := range m[subjectKey{name: user}] {
			if !fn(g) {
				return
			}
		}
		for _, group := range groups {
			for _, g := range m[subjectKey{group: true, name: group}] {
				if !fn(g) {
					return
				}
			}
		}
	}
}

// Missing names the bindings whose role does not exist.
func (ix *Index) Missing() string { return strings.Join(ix.missing, "; ") }
