package rbac

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/berth-dev/berth/store"
)

// Authorizer decides requests by the RBAC objects of a store. It keeps an
// Index of them and builds it again only after one of the four kinds
// changed, which the store's per-kind revisions tell it with four atomic
// loads, so a check never misses a binding the store already holds and
// costs a few map lookups between RBAC writes.
type Authorizer struct {
	store *store.Store

	mu    sync.Mutex // one rebuild at a time
	state atomic.Pointer[indexState]
}

type indexState struct {
	ix *Index
	// rev is the newest RBAC write the index holds.
	rev uint64
}

// New makes the authorizer of a store.
func New(st *store.Store) *Authorizer { return &Authorizer{store: st} }

// rbacRevision is the revision of the newest RBAC write.
func (a *Authorizer) rbacRevision() uint64 {
	var rev uint64
	for _, k := range Kinds {
		rev = max(rev, a.store.KindRevision(k))
	}
	return rev
}

// Index returns the current index, built again if the RBAC objects
// changed since.
func (a *Authorizer) Index() (*Index, error) {
	want := a.rbacRevision()
	if s := a.state.Load(); s != nil && s.rev == want {
		return s.ix, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	want = a.rbacRevision()
	if s := a.state.Load(); s != nil && s.rev == want {
		return s.ix, nil
	}
	snap := a.store.Snapshot()
	ix, err := BuildIndex(snap)
	if err != nil {
		return nil, err
	}
	if snap.Revision() >= want {
		a.state.Store(&indexState{ix: ix, rev: want})
	}
	// Else the write is not yet readable: this index serves this check
	// and the next builds again.
	return ix, nil
}

// Authorize implements authorizer.Authorizer: allowed when a rule granted
// to the user or one of its groups matches, else no opinion (the chain
// ends in a denial).
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	ix, err := a.Index()
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	return ix.Authorize(attrs)
}

// Authorize decides a request against the index.
func (ix *Index) Authorize(attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "no user", nil
	}
	var by *grant
	ix.visit(u.GetName(), u.GetGroups(), attrs.GetNamespace(), func(g *grant) bool {
		for i := range g.rules {
			if RuleAllows(attrs, &g.rules[i]) {
				by = g
				return false
			}
		}
		return true
	})
	if by != nil {
		return authorizer.DecisionAllow, fmt.Sprintf("RBAC: allowed by %s of %s", by.binding, by.role), nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// RulesFor returns every rule granted to a user in a namespace (the
// cluster-wide ones included; namespace "" for those alone), as
// Kubernetes' rule resolver does for escalation checks and the rules
// review.
func (ix *Index) RulesFor(u user.Info, namespace string) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	ix.visit(u.GetName(), u.GetGroups(), namespace, func(g *grant) bool {
		rules = append(rules, g.rules...)
		return true
	})
	return rules
}

// RulesFor implements authorizer.RuleResolver.
func (a *Authorizer) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	ix, err := a.Index()
	if err != nil {
		return nil, nil, true, err
	}
	var (
		res    []authorizer.ResourceRuleInfo
		nonRes []authorizer.NonResourceRuleInfo
	)
	for _, r := range ix.RulesFor(u, namespace) {
		if len(r.NonResourceURLs) > 0 {
			nonRes = append(nonRes, &authorizer.DefaultNonResourceRuleInfo{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			continue
		}
		res = append(res, &authorizer.DefaultResourceRuleInfo{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	return res, nonRes, false, nil
}
