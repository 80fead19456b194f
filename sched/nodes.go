package sched

import (
	"slices"

	"github.com/berth-dev/berth/api"
)

// nodeChunk is how many NodeInfos are allocated together.
const nodeChunk = 256

// Nodes is what the framework schedules over: the nodes, and the pods
// placed on them. It is laid out for a cycle that reads a few fields of
// hundreds of nodes: NodeInfos are allocated side by side in the order
// nodes come, so a sample is read from memory in sequence; and for each
// controller the number of its running pods on every node is one dense
// column, so spreading reads one number per node instead of searching a
// list of owners on each.
//
// The cache keeps one up to date from the store; tests build their own.
// It is not safe for concurrent use.
type Nodes struct {
	// list holds the nodes with a Node object, in the order they came.
	list []*NodeInfo
	// byName holds every NodeInfo, also those of nodes not seen (yet, or
	// any more) that still have pods bound to them.
	byName map[string]*NodeInfo
	chunk  []NodeInfo
	free   []*NodeInfo
	slots  int32
	spread map[uint64]*ownerColumn
	// antiTerms are the distinct anti-affinity terms of the placed pods,
	// each with how many pods hold it.
	antiTerms map[string]*placedTerm
	// labelsCounted: the nodes count their pods' labels (NodeInfo.
	// labelPods), which they do from the first pod with anti-affinity to
	// be scheduled on.
	labelsCounted bool
	// zoneIDs numbers the values of the nodes' zone labels from 1
	// (NodeInfo.zone), and zoned counts the listed nodes with the label:
	// until one has it, spreading is by node alone.
	zoneIDs map[string]int32
	zoned   int
	// slotNodes is the NodeInfo of each index, for reading an owner's
	// column node by node.
	slotNodes []*NodeInfo
	// scoringPods counts the placed pods whose inter-pod affinity terms
	// count in other pods' scores: while there are none, a pod without
	// preferred terms of its own skips InterPodAffinity scoring.
	scoringPods int
	// namespaces are the labels of each namespace, for namespaceSelectors.
	namespaces map[string]map[string]string
	// scoreTerms are the distinct inter-pod terms of placed pods that
	// count in other pods' scores, by kind, weight and term key.
	scoreTerms map[string]*placedScoreTerm
	// hostScores is the buffer of the InterPodAffinity scores by node.
	hostScores []int64
	// priorities counts the placed pods by priority, so that a pod no
	// placed pod is below skips preemption at once.
	priorities map[int32]int32
	// budgets are the PodDisruptionBudgets, by namespace/name.
	budgets map[string]*api.PodDisruptionBudget
	// podCounts count the pods that the selectors of the spread
	// constraints and inter-pod terms of the pods scheduled lately
	// select, per node and per domain (see domainCounter); nsCounts are
	// the same by namespace, and uses numbers the asks for one, for
	// dropping the one asked for least recently.
	podCounts map[podSetKey]*podCount
	nsCounts  map[string][]*podCount
	uses      uint64
	// hostNodes counts the listed nodes with the hostname label;
	// keyDomains the listed nodes by the value of each topology key a
	// cycle has asked for, and keyNodes those with the key.
	hostNodes  int
	keyDomains map[string]map[string]int32
	keyNodes   map[string]int
}

// SetBudget records a PodDisruptionBudget; nil forgets the one of key.
func (ns *Nodes) SetBudget(key string, b *api.PodDisruptionBudget) {
	if b == nil {
		delete(ns.budgets, key)
		return
	}
	if ns.budgets == nil {
		ns.budgets = map[string]*api.PodDisruptionBudget{}
	}
	ns.budgets[key] = b
}

// budgetList returns the budgets, in no order.
func (ns *Nodes) budgetList() []*api.PodDisruptionBudget {
	out := make([]*api.PodDisruptionBudget, 0, len(ns.budgets))
	for _, b := range ns.budgets {
		out = append(out, b)
	}
	return out
}

// anyBelow reports whether a placed pod has a priority below p.
func (ns *Nodes) anyBelow(p int32) bool {
	for prio, c := range ns.priorities {
		if prio < p && c > 0 {
			return true
		}
	}
	return false
}

func (ns *Nodes) countPriority(p int32, d int32) {
	if ns.priorities == nil {
		ns.priorities = map[int32]int32{}
	}
	if c := ns.priorities[p] + d; c > 0 {
		ns.priorities[p] = c
	} else {
		delete(ns.priorities, p)
	}
}

// SetNamespace records a namespace's labels; nil labels forget it.
func (ns *Nodes) SetNamespace(name string, labels map[string]string) {
	if labels == nil {
		delete(ns.namespaces, name)
		return
	}
	if ns.namespaces == nil {
		ns.namespaces = map[string]map[string]string{}
	}
	ns.namespaces[name] = labels
}

// placedTerm is one distinct anti-affinity term of placed pods.
type placedTerm struct {
	term affinityTerm
	pods int
}

// ownerColumn counts one controller's running pods per node index, and
// per zone number.
type ownerColumn struct {
	counts []int32
	zones  []int32
	total  int
}

// NewNodes returns the Nodes of nodes, with no pods placed.
func NewNodes(nodes ...*api.Node) *Nodes {
	ns := &Nodes{byName: map[string]*NodeInfo{}, spread: map[uint64]*ownerColumn{}}
	for _, n := range nodes {
		ns.Set(n)
	}
	return ns
}

// List returns the nodes to schedule on, in a stable order. The slice is
// the Nodes' own; do not change it.
func (ns *Nodes) List() []*NodeInfo { return ns.list }

// Get returns a node's NodeInfo, nil if there is none.
func (ns *Nodes) Get(name string) *NodeInfo { return ns.byName[name] }

// Set adds a node or refreshes it, and returns its NodeInfo and whether
// the node is new to the list.
func (ns *Nodes) Set(node *api.Node) (*NodeInfo, bool) {
	n := ns.byName[node.Name]
	if n == nil {
		n = ns.alloc(node.Name)
	}
	added := n.node == nil
	oldLabels, oldHostname := n.labels, n.flags&flagHostname != 0
	n.setNode(node)
	if added {
		ns.list = append(ns.list, n)
	}
	ns.setZone(n, node)
	ns.relist(n, !added, oldLabels, oldHostname)
	return n, added
}

// Remove takes a deleted node out of the list. Its NodeInfo stays while
// pods are bound to it.
func (ns *Nodes) Remove(name string) {
	n := ns.byName[name]
	if n == nil || n.node == nil {
		return
	}
	oldLabels, oldHostname := n.labels, n.flags&flagHostname != 0
	n.node = nil
	ns.setZone(n, nil)
	ns.relist(n, true, oldLabels, oldHostname)
	ns.list = slices.DeleteFunc(ns.list, func(x *NodeInfo) bool { return x == n })
	ns.release(n)
}

// AddPod places a pod on the node of that name, which need not have been
// seen yet.
func (ns *Nodes) AddPod(name string, p *placedPod) *NodeInfo {
	n := ns.byName[name]
	if n == nil {
		n = ns.alloc(name)
	}
	n.addPod(p)
	ns.countPod(n, p, 1)
	ns.countPriority(p.Priority, 1)
	if p.Owner != 0 && !p.Terminating {
		ns.count(p.Owner, n, 1)
	}
	for i := range p.antiAffinity {
		t := &p.antiAffinity[i]
		pt := ns.antiTerms[t.key]
		if pt == nil {
			if ns.antiTerms == nil {
				ns.antiTerms = map[string]*placedTerm{}
			}
			pt = &placedTerm{term: *t}
			ns.antiTerms[t.key] = pt
		}
		pt.pods++
	}
	if p.interPodTerms.scores() {
		ns.scoringPods++
		ns.countScoreTerms(p, n, 1)
	}
	return n
}

// antiTermsMatching appends to out the distinct terms of placed pods that
// select pod: each is matched once for the whole cycle, rather than once
// for every pod that holds it on every node.
func (ns *Nodes) antiTermsMatching(pod *PodInfo, out []antiMatch) []antiMatch {
	for key, pt := range ns.antiTerms {
		if pt.term.matches(&pod.podFacts, ns.namespaces) {
			out = append(out, antiMatch{key: key, topologyKey: pt.term.topologyKey})
		}
	}
	return out
}

// RemovePod takes a pod placed with AddPod off its node, and reports
// whether it was there.
func (ns *Nodes) RemovePod(n *NodeInfo, p *placedPod) bool {
	if !n.removePod(p) {
		return false
	}
	ns.countPod(n, p, -1)
	ns.countPriority(p.Priority, -1)
	if p.interPodTerms.scores() {
		ns.scoringPods--
		ns.countScoreTerms(p, n, -1)
	}
	if p.Owner != 0 && !p.Terminating {
		ns.count(p.Owner, n, -1)
	}
	for i := range p.antiAffinity {
		k := p.antiAffinity[i].key
		if pt := ns.antiTerms[k]; pt != nil {
			if pt.pods--; pt.pods <= 0 {
				delete(ns.antiTerms, k)
			}
		}
	}
	ns.release(n)
	return true
}

// alloc takes a NodeInfo from the free list or the current chunk.
func (ns *Nodes) alloc(name string) *NodeInfo {
	var n *NodeInfo
	if k := len(ns.free); k > 0 {
		n = ns.free[k-1]
		ns.free = ns.free[:k-1]
		*n = NodeInfo{index: n.index}
	} else {
		if len(ns.chunk) == 0 {
			ns.chunk = make([]NodeInfo, nodeChunk)
		}
		n = &ns.chunk[0]
		ns.chunk = ns.chunk[1:]
		n.index = ns.slots
		ns.slots++
		ns.slotNodes = append(ns.slotNodes, n)
	}
	n.name = name
	n.zone = zoneUnlisted
	n.labelsCounted = ns.labelsCounted
	ns.byName[name] = n
	return n
}

// countPodLabels has every node count its pods' labels from now on, for
// the anti-affinity terms of a pod to be scheduled. A cluster without
// anti-affinity never pays for the counts: 100,000 pods' labels took
// 9.5 MB.
func (ns *Nodes) countPodLabels() {
	if ns.labelsCounted {
		return
	}
	ns.labelsCounted = true
	for _, n := range ns.byName {
		n.labelsCounted = true
		for _, p := range n.pods {
			n.countLabels(p, 1)
		}
	}
}

// release frees the NodeInfo of a node that is gone and holds no pods;
// its counts in every column are zero by then.
func (ns *Nodes) release(n *NodeInfo) {
	if n.node == nil && len(n.pods) == 0 {
		delete(ns.byName, n.name)
		ns.free = append(ns.free, n)
	}
}

// count adds d to the owner's count on node n, and in n's zone.
func (ns *Nodes) count(owner uint64, n *NodeInfo, d int32) {
	col := ns.spread[owner]
	if col == nil {
		col = &ownerColumn{}
		ns.spread[owner] = col
	}
	if int(n.index) >= len(col.counts) {
		col.counts = append(col.counts, make([]int32, int(ns.slots)-len(col.counts))...)
	}
	col.counts[n.index] += d
	col.countZone(n.zone, d)
	col.total += int(d)
	if col.total <= 0 {
		delete(ns.spread, owner)
	}
}

func (col *ownerColumn) countZone(zone, d int32) {
	if zone == zoneUnlisted {
		return
	}
	if int(zone) >= len(col.zones) {
		col.zones = append(col.zones, make([]int32, int(zone)+1-len(col.zones))...)
	}
	col.zones[zone] += d
}

// zoneUnlisted is the zone of a node without a Node object: its pods
// count in no zone, as kube-scheduler counts over the nodes it lists.
const zoneUnlisted = -1

// setZone sets n's zone from node, nil when n leaves the list: the
// number of its zone label's value, 0 for an empty value or none (one
// domain, as kube-scheduler's "" value), and flagZone when it has the
// label.
func (ns *Nodes) setZone(n *NodeInfo, node *api.Node) {
	id, labelled := int32(zoneUnlisted), false
	if node != nil {
		var value string
		value, labelled = node.Labels[api.LabelTopologyZone]
		id = 0
		if value != "" {
			var ok bool
			if id, ok = ns.zoneIDs[value]; !ok {
				if ns.zoneIDs == nil {
					ns.zoneIDs = map[string]int32{}
				}
				id = int32(len(ns.zoneIDs)) + 1
				ns.zoneIDs[value] = id
			}
		}
	}
	if n.flags&flagZone != 0 {
		ns.zoned--
	}
	if labelled {
		ns.zoned++
	}
	n.setFlag(flagZone, labelled)
	if id == n.zone {
		return
	}
	// The node's pods move to its new zone in their owners' counts.
	for _, p := range n.pods {
		if col := ns.spread[p.Owner]; col != nil && p.Owner != 0 && !p.Terminating {
			col.countZone(n.zone, -1)
			col.countZone(id, 1)
		}
	}
	n.zone = id
}

// zoneCounts counts the pods of the pod's owner (column, its
// ownerCounts) by zone into out, indexed by zone number, as kube-scheduler's spreading counts
// them: on every node with a Node object whose labels the pod's required
// node affinity and node selector accept (its nodeAffinityPolicy,
// Honor). It returns nil when no node has a zone label.
func (ns *Nodes) zoneCounts(pod *PodInfo, column, out []int32) []int32 {
	if ns.zoned == 0 {
		return nil
	}
	out = append(out[:0], make([]int32, len(ns.zoneIDs)+1)...)
	if pod.nodeSelector.empty() {
		// Every node counts: the owner's column has the sums.
		if col := ns.spread[pod.Owner]; col != nil {
			copy(out, col.zones)
		}
		return out
	}
	for i, c := range column {
		if c == 0 {
			continue
		}
		n := ns.slotNodes[i]
		if n.zone == zoneUnlisted || !pod.nodeSelector.matches(n) {
			continue
		}
		out[n.zone] += c
	}
	return out
}

// ownerCounts returns an owner's column, nil if it has no running pods.
func (ns *Nodes) ownerCounts(owner uint64) []int32 {
	if col := ns.spread[owner]; col != nil {
		return col.counts
	}
	return nil
}
