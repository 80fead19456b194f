package sched

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
)

// maxPodCounts bounds the selectors the Nodes count pods of (podCount):
// past it, the one asked for least recently is dropped, and counted
// anew if it is asked for again.
const maxPodCounts = 128

// domainCounter counts a set of placed pods on every node and in every
// topology domain, kept as pods are placed and taken off and as nodes
// come, go and change their labels. It is what kube-scheduler's
// PodTopologySpread and InterPodAffinity PreFilter and PreScore find by
// reading every node's pods, found once and kept up to date, so that a
// pod's cycle reads a count per domain instead of every node's pods.
type domainCounter struct {
	// perNode counts the set's pods by NodeInfo index, on every node,
	// listed or not.
	perNode []int32
	// hosts counts the listed nodes with the hostname label by how many
	// of the set's pods they hold, from one (hosts[c], c ≥ 1); hostsWith
	// is their sum. The nodes with none are the others.
	hosts     []int32
	hostsWith int32
	// keys count the pods on the listed nodes by topology key (other than
	// the hostname) and the node's value of it; a value with no pod is
	// absent. A key is counted from the first cycle that asks for it.
	keys map[string]map[string]int64
}

// at is the set's count on node n.
func (dc *domainCounter) at(n *NodeInfo) int64 {
	if i := int(n.index); i < len(dc.perNode) {
		return int64(dc.perNode[i])
	}
	return 0
}

// add adds d to the set's count on n.
func (dc *domainCounter) add(ns *Nodes, n *NodeInfo, d int32) {
	i := int(n.index)
	if i >= len(dc.perNode) {
		dc.perNode = append(dc.perNode, make([]int32, int(ns.slots)-len(dc.perNode))...)
	}
	old := dc.perNode[i]
	dc.perNode[i] = old + d
	if n.node == nil {
		return // not listed: in no domain
	}
	if n.flags&flagHostname != 0 {
		dc.countHost(old, -1)
		dc.countHost(old+d, 1)
	}
	for key, values := range dc.keys {
		if v, ok := n.labels[key]; ok {
			addValue(values, v, int64(d))
		}
	}
}

// countHost adds d to the nodes holding c of the set's pods.
func (dc *domainCounter) countHost(c, d int32) {
	if c <= 0 {
		return
	}
	if int(c) >= len(dc.hosts) {
		dc.hosts = append(dc.hosts, make([]int32, int(c)+1-len(dc.hosts))...)
	}
	dc.hosts[c] += d
	dc.hostsWith += d
}

// hostMinimum is the fewest of the set's pods a listed node with the
// hostname label holds, of hostNodes such nodes.
func (dc *domainCounter) hostMinimum(hostNodes int) int64 {
	if int(dc.hostsWith) < hostNodes {
		return 0
	}
	for c, k := range dc.hosts {
		if c > 0 && k > 0 {
			return int64(c)
		}
	}
	return 0
}

// key returns the set's pods by value of the topology key, counting them
// on first use: a value absent holds none. The map is the counter's own.
func (dc *domainCounter) key(ns *Nodes, key string) map[string]int64 {
	if values, ok := dc.keys[key]; ok {
		return values
	}
	values := map[string]int64{}
	for _, n := range ns.list {
		c := dc.at(n)
		if c == 0 {
			continue
		}
		if v, ok := n.labels[key]; ok {
			values[v] += c
		}
	}
	if dc.keys == nil {
		dc.keys = map[string]map[string]int64{}
	}
	dc.keys[key] = values
	return values
}

// nodeIn counts the set's pods on n in n's domains, as n is listed or
// gets new labels; nodeOut takes them out of the domains of labels.
func (dc *domainCounter) nodeIn(n *NodeInfo) {
	dc.moveNode(n, n.labels, n.flags&flagHostname != 0, 1)
}

func (dc *domainCounter) nodeOut(n *NodeInfo, labels map[string]string, hostname bool) {
	dc.moveNode(n, labels, hostname, -1)
}

func (dc *domainCounter) moveNode(n *NodeInfo, labels map[string]string, hostname bool, sign int32) {
	c := int32(dc.at(n))
	if c == 0 {
		return
	}
	if hostname {
		dc.countHost(c, sign)
	}
	for key, values := range dc.keys {
		if v, ok := labels[key]; ok {
			addValue(values, v, int64(sign*c))
		}
	}
}

// addValue adds d to m[v], dropping the entry at zero.
func addValue[N int32 | int64](m map[string]N, v string, d N) {
	if c := m[v] + d; c != 0 {
		m[v] = c
	} else {
		delete(m, v)
	}
}

// podCount is a domainCounter of the pods of one namespace a label
// selector selects: those a spread constraint or an inter-pod term of a
// pod being scheduled counts.
type podCount struct {
	domainCounter
	namespace string
	selector  labels.Selector
	// terminating: pods being deleted count, as for inter-pod affinity;
	// topology spreading leaves them out.
	terminating bool
	used        uint64
}

// podSetKey names a podCount.
type podSetKey struct {
	namespace, selector string
	terminating         bool
}

// selectorKey is a selector's part of a podSetKey: its String is
// canonical (sorted requirements), and its type tells the selector that
// matches nothing from the one that matches everything, which print
// alike.
func selectorKey(sel labels.Selector) string { return fmt.Sprintf("%T\x00%s", sel, sel.String()) }

// podCount returns the count of the pods of namespace that sel (whose
// selectorKey is selKey) selects, counting them over every node the
// first time it is asked for.
func (ns *Nodes) podCount(namespace string, sel labels.Selector, selKey string, terminating bool) *podCount {
	key := podSetKey{namespace, selKey, terminating}
	ns.uses++
	if pc := ns.podCounts[key]; pc != nil {
		pc.used = ns.uses
		return pc
	}
	if len(ns.podCounts) >= maxPodCounts {
		var oldest podSetKey
		var at uint64
		for k, pc := range ns.podCounts {
			if at == 0 || pc.used < at {
				oldest, at = k, pc.used
			}
		}
		ns.dropPodCount(oldest)
	}
	pc := &podCount{namespace: namespace, selector: sel, terminating: terminating, used: ns.uses}
	pc.perNode = make([]int32, ns.slots)
	for _, n := range ns.byName {
		for _, p := range n.pods {
			if pc.counts(p) {
				pc.perNode[n.index]++
			}
		}
		if c := pc.perNode[n.index]; c > 0 && n.node != nil && n.flags&flagHostname != 0 {
			pc.countHost(c, 1)
		}
	}
	if ns.podCounts == nil {
		ns.podCounts = map[podSetKey]*podCount{}
		ns.nsCounts = map[string][]*podCount{}
	}
	ns.podCounts[key] = pc
	ns.nsCounts[namespace] = append(ns.nsCounts[namespace], pc)
	return pc
}

func (ns *Nodes) dropPodCount(key podSetKey) {
	pc := ns.podCounts[key]
	delete(ns.podCounts, key)
	list := ns.nsCounts[key.namespace]
	for i, x := range list {
		if x == pc {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(ns.nsCounts, key.namespace)
	} else {
		ns.nsCounts[key.namespace] = list
	}
}

// counts reports whether the set holds p.
func (pc *podCount) counts(p *placedPod) bool {
	return p.Namespace == pc.namespace && (pc.terminating || !p.Terminating) && pc.selector.Matches(labels.Set(p.Labels))
}

// countPod adds d to the counts of every set that holds p, on n.
func (ns *Nodes) countPod(n *NodeInfo, p *placedPod, d int32) {
	for _, pc := range ns.nsCounts[p.Namespace] {
		if pc.counts(p) {
			pc.add(ns, n, d)
		}
	}
}

// eachCounter calls fn with every domainCounter the Nodes keep.
func (ns *Nodes) eachCounter(fn func(*domainCounter)) {
	for _, pc := range ns.podCounts {
		fn(&pc.domainCounter)
	}
	for _, pt := range ns.scoreTerms {
		fn(&pt.domainCounter)
	}
}

// relist counts a node that is listed or relabelled in the domains:
// the nodes' own by key (keyNodes) and the counters'. oldLabels and
// oldHostname are what it had, listed is whether it was listed.
func (ns *Nodes) relist(n *NodeInfo, listed bool, oldLabels map[string]string, oldHostname bool) {
	if listed && n.node != nil && maps.Equal(oldLabels, n.labels) {
		return // a heartbeat or status: no domain changes
	}
	if listed {
		ns.countNodeDomains(oldLabels, oldHostname, -1)
		ns.eachCounter(func(dc *domainCounter) { dc.nodeOut(n, oldLabels, oldHostname) })
	}
	if n.node != nil {
		ns.countNodeDomains(n.labels, n.flags&flagHostname != 0, 1)
		ns.eachCounter(func(dc *domainCounter) { dc.nodeIn(n) })
	}
}

// countNodeDomains adds d to the listed nodes counted by their labels.
func (ns *Nodes) countNodeDomains(labels map[string]string, hostname bool, d int32) {
	if hostname {
		ns.hostNodes += int(d)
	}
	for key, values := range ns.keyDomains {
		if v, ok := labels[key]; ok {
			addValue(values, v, d)
			ns.keyNodes[key] += int(d)
		}
	}
}

// keyCount returns how many listed nodes have the topology key, and how
// many values they have of it (the domains); for the hostname, each such
// node is a domain of its own.
func (ns *Nodes) keyCount(key string) (nodes, domains int) {
	if key == api.LabelHostname {
		return ns.hostNodes, ns.hostNodes
	}
	values, ok := ns.keyDomains[key]
	if !ok {
		values = map[string]int32{}
		nodes := 0
		for _, n := range ns.list {
			if v, ok := n.labels[key]; ok {
				values[v]++
				nodes++
			}
		}
		if ns.keyDomains == nil {
			ns.keyDomains, ns.keyNodes = map[string]map[string]int32{}, map[string]int{}
		}
		ns.keyDomains[key], ns.keyNodes[key] = values, nodes
	}
	return ns.keyNodes[key], len(values)
}

// everyNodeHas reports whether every listed node has the topology key.
func (ns *Nodes) everyNodeHas(key string) bool {
	nodes, _ := ns.keyCount(key)
	return nodes == len(ns.list)
}
