package ui

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// treeNode is an object of a source's tree and what it owns.
type treeNode struct {
	Kind      string
	Resource  string
	Namespace string
	Name      string
	Health    Health
	Message   string
	Age       string
	// Drift is the message of the last drift the applier reverted on
	// the object, if any.
	Drift    string
	Children []*treeNode
	// Folded counts the children left out of Children by health, when
	// there were more than a page shows.
	Folded []healthCount
}

type healthCount struct {
	Health Health
	Count  int
}

// maxChildren is how many children of one object a tree shows unless
// asked for all: a Deployment's thousand pods are read as a summary.
const maxChildren = 100

// fold keeps the first max children of every node (all when max < 0),
// those not healthy first so that none is hidden, and counts the rest by
// health.
func fold(ns []*treeNode, max int) {
	for _, n := range ns {
		if max >= 0 && len(n.Children) > max {
			slices.SortStableFunc(n.Children, func(a, b *treeNode) int { return cmp.Compare(healthRank(a.Health), healthRank(b.Health)) })
			counts := map[Health]int{}
			for _, c := range n.Children[max:] {
				counts[c.Health] += 1 + treeCount(c.Children)
			}
			for _, h := range []Health{Degraded, Progressing, Unknown, Healthy} {
				if counts[h] > 0 {
					n.Folded = append(n.Folded, healthCount{h, counts[h]})
				}
			}
			n.Children = n.Children[:max]
		}
		fold(n.Children, max)
	}
}

func healthRank(h Health) int {
	switch h {
	case Degraded:
		return 0
	case Progressing, Unknown:
		return 1
	}
	return 2
}

// Link is the object's page.
func (n *treeNode) Link() string { return objectLink(n.Resource, n.Namespace, n.Name) }

// buildTree makes the trees of the objects source applied (those whose
// berth.dev/source annotation names it) down through what they own by
// owner reference: Deployment → ReplicaSet → Pod, StatefulSet → Pod,
// DaemonSet → Pod, CronJob → Job → Pod, Service → EndpointSlice; and a
// StatefulSet → the claims of its volumeClaimTemplates, owned or not. drift maps an object's UID to the drift message to mark
// it with. Roots and children come sorted by kind, namespace and name.
func buildTree(source string, objs []api.Object, drift map[types.UID]string, now time.Time) []*treeNode {
	nodes := make(map[types.UID]*treeNode, len(objs))
	for _, o := range objs {
		k := api.KindOf(o)
		if k == nil {
			continue
		}
		h, msg := healthOf(o)
		nodes[o.GetUID()] = &treeNode{Kind: k.GVK.Kind, Resource: k.Resource, Namespace: o.GetNamespace(), Name: o.GetName(),
			Health: h, Message: msg, Age: age(now, o.GetCreationTimestamp().Time), Drift: drift[o.GetUID()]}
	}
	// A StatefulSet's claims are owned by it only when its retention
	// policy deletes them; the others are found by name.
	var sets []setClaims
	for _, o := range objs {
		if set, ok := o.(*api.StatefulSet); ok && len(set.Spec.VolumeClaimTemplates) > 0 {
			sets = append(sets, setClaims{set: set, node: nodes[set.UID]})
		}
	}
	var roots []*treeNode
	for _, o := range objs {
		n := nodes[o.GetUID()]
		if n == nil {
			continue
		}
		if o.GetAnnotations()[api.AnnotationSource] == source {
			roots = append(roots, n)
			continue
		}
		placed := false
		for _, ref := range o.GetOwnerReferences() {
			if p := nodes[ref.UID]; p != nil && p != n {
				p.Children = append(p.Children, n)
				placed = true
				break
			}
		}
		if !placed {
			if c, ok := o.(*api.PersistentVolumeClaim); ok {
				if set := setOfClaim(c, sets); set != nil {
					set.Children = append(set.Children, n)
				}
			}
		}
	}
	sortNodes(roots)
	for _, n := range nodes {
		sortNodes(n.Children)
	}
	return roots
}

func sortNodes(ns []*treeNode) {
	slices.SortFunc(ns, func(a, b *treeNode) int {
		return cmp.Or(cmp.Compare(kindRank(a.Kind), kindRank(b.Kind)), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// kindRank puts a source's namespaces and workloads first, as one reads
// a tree of what runs.
func kindRank(kind string) int {
	switch kind {
	case "Namespace":
		return 0
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob":
		return 1
	case "Pod":
		return 2
	case "PersistentVolumeClaim":
		return 3
	case "Service", "Ingress", "EndpointSlice":
		return 4
	}
	return 5
}

// treeCount is the number of objects in the trees, folded ones too.
func treeCount(ns []*treeNode) int {
	n := len(ns)
	for _, c := range ns {
		n += treeCount(c.Children)
		for _, f := range c.Folded {
			n += f.Count
		}
	}
	return n
}

// setClaims is a StatefulSet with claim templates and its tree node.
type setClaims struct {
	set  *api.StatefulSet
	node *treeNode
}

// setOfClaim is the node of the StatefulSet a claim was made for: one in
// its namespace with a template T such that the claim is T-SET-ORDINAL.
func setOfClaim(c *api.PersistentVolumeClaim, sets []setClaims) *treeNode {
	for _, s := range sets {
		if s.node == nil || s.set.Namespace != c.Namespace {
			continue
		}
		for _, t := range s.set.Spec.VolumeClaimTemplates {
			ord, ok := strings.CutPrefix(c.Name, t.Name+"-"+s.set.Name+"-")
			if !ok || ord == "" || strings.TrimLeft(ord, "0123456789") != "" {
				continue
			}
			return s.node
		}
	}
	return nil
}
