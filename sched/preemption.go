package sched

import (
	"fmt"
	"math"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
)

// Preemption's messages and bounds, kube-scheduler's (DefaultPreemption).
const (
	reasonNoVictims         = "No preemption victims found for incoming pod"
	reasonPreemptionUseless = "Preemption is not helpful for scheduling"
	msgPreemptNever         = "not eligible due to preemptionPolicy=Never."
	msgNominatedTerminating = "not eligible due to a terminating pod on the nominated node."
	// A dry run stops once it has this share of the nodes as candidates,
	// and at least this many.
	minCandidateNodesPercentage = 10
	minCandidateNodesAbsolute   = 100
)

var (
	statusNoVictims         = newUnresolvable("DefaultPreemption", reasonNoVictims)
	statusPreemptionUseless = newUnresolvable("DefaultPreemption", reasonPreemptionUseless)
)

// Victim names a pod to preempt.
type Victim struct {
	Namespace, Name string
	UID             string
}

// Preemption is the outcome of kube-scheduler's DefaultPreemption
// PostFilter for a pod no node could take: the node it is nominated to
// and the pods of lower priority to delete there, or, when preemption
// cannot help, why (Message, which the FitError carries after the
// filters' reasons).
type Preemption struct {
	Node    string
	Victims []Victim
	Message string
}

// candidate is a node where preemption would make room.
type candidate struct {
	node      *NodeInfo
	victims   []*placedPod
	violating int
}

// Preempt runs kube-scheduler's DefaultPreemption for a pod the last
// Schedule call found no node for (fitErr): on each node that failed for
// a reason removing pods could cure, it removes every pod of lower
// priority, checks that the pod then fits, and gives back as many of
// them as still let it fit, the most important first, those a
// PodDisruptionBudget protects before the others; then it picks the node
// whose victims break the fewest budgets, have the lowest highest
// priority, the lowest sum of priorities, are fewest, and started last.
// all is left as it was. budgets are the PodDisruptionBudgets, by
// namespace.
func (f *Framework) Preempt(pod *PodInfo, all *Nodes, fitErr *FitError, budgets []*api.PodDisruptionBudget) Preemption {
	if p := pod.Pod.Spec.PreemptionPolicy; p != nil && *p == api.PreemptNever {
		return Preemption{Message: notEligible(msgPreemptNever)}
	}
	if nom := pod.Pod.Status.NominatedNodeName; nom != "" {
		if n := all.Get(nom); n != nil && n.node != nil {
			for _, p := range n.pods {
				if p.Priority < pod.Priority && p.preempted && p.Terminating {
					return Preemption{Message: notEligible(msgNominatedTerminating)}
				}
			}
		}
	}
	nodes := all.list
	n := len(nodes)
	if fitErr == nil || n == 0 {
		return Preemption{}
	}
	out := make([]*Status, n)
	if fitErr.PreFilterMsg != "" {
		// No node could take the pod whatever it holds.
		for i := range out {
			out[i] = statusPreemptionUseless
		}
		msg := newFitError(n, out).Error()
		return Preemption{Message: "preemption: " + msg[:len(msg)-1]}
	}
	if len(fitErr.statuses) != n {
		return Preemption{}
	}
	if !all.anyBelow(pod.Priority) {
		// No pod anywhere has a lower priority: every node that removing
		// pods could help has no victims.
		for i, st := range fitErr.statuses {
			out[i] = statusNoVictims
			if st == nil || st.unresolvable {
				out[i] = statusPreemptionUseless
			}
		}
		msg := newFitError(n, out).Error()
		return Preemption{Message: "preemption: " + msg[:len(msg)-1]}
	}
	var potential []int
	for i, st := range fitErr.statuses {
		if st == nil || st.unresolvable {
			out[i] = statusPreemptionUseless
			continue
		}
		potential = append(potential, i)
	}
	want := max(n*minCandidateNodesPercentage/100, minCandidateNodesAbsolute)
	var candidates []candidate
	if len(potential) > 0 {
		offset := f.rng.IntN(len(potential))
		for k := range potential {
			i := potential[(offset+k)%len(potential)]
			victims, violating, st := f.selectVictims(pod, all, nodes[i], budgets)
			if st != nil {
				out[i] = st
				continue
			}
			candidates = append(candidates, candidate{node: nodes[i], victims: victims, violating: violating})
			if len(candidates) >= want {
				break
			}
		}
	}
	if len(candidates) == 0 {
		for i := range out {
			if out[i] == nil {
				out[i] = statusNoVictims
			}
		}
		msg := newFitError(n, out).Error()
		return Preemption{Message: "preemption: " + msg[:len(msg)-1]}
	}
	best := pickCandidate(candidates)
	p := Preemption{Node: best.node.name}
	for _, v := range best.victims {
		p.Victims = append(p.Victims, Victim{Namespace: v.Namespace, Name: v.Name, UID: string(v.UID)})
	}
	return p
}

// notEligible is the message of a pod that may not preempt, without the
// full stop the FitError adds.
func notEligible(msg string) string { return "preemption: " + strings.TrimSuffix(msg, ".") }

// fits runs the filters for pod on node as a cycle over all would.
func (f *Framework) fits(pod *PodInfo, all *Nodes, node *NodeInfo) *Status {
	state, err := f.begin(pod, all)
	defer f.end()
	if err != nil {
		return NewStatus("VolumeBinding", err.Error())
	}
	return f.filter(state, pod, node)
}

// selectVictims is kube-scheduler's SelectVictimsOnNode, on all itself:
// the pods it takes off are put back before it returns.
func (f *Framework) selectVictims(pod *PodInfo, all *Nodes, node *NodeInfo, budgets []*api.PodDisruptionBudget) ([]*placedPod, int, *Status) {
	var lower []*placedPod
	for _, p := range node.pods {
		if p.Priority < pod.Priority && !p.Terminating {
			lower = append(lower, p)
		}
	}
	if len(lower) == 0 {
		return nil, 0, statusNoVictims
	}
	for _, p := range lower {
		all.RemovePod(node, p)
	}
	if st := f.fits(pod, all, node); st != nil {
		for _, p := range lower {
			all.AddPod(node.name, p)
		}
		return nil, 0, st
	}
	slices.SortStableFunc(lower, moreImportant)
	violating, nonViolating := splitByBudgets(lower, budgets)
	var victims []*placedPod
	numViolating := 0
	reprieve := func(p *placedPod) bool {
		all.AddPod(node.name, p)
		if f.fits(pod, all, node) == nil {
			return true
		}
		all.RemovePod(node, p)
		victims = append(victims, p)
		return false
	}
	for _, p := range violating {
		if !reprieve(p) {
			numViolating++
		}
	}
	for _, p := range nonViolating {
		reprieve(p)
	}
	for _, p := range victims {
		all.AddPod(node.name, p)
	}
	slices.SortStableFunc(victims, moreImportant)
	return victims, numViolating, nil
}

// moreImportant orders pods by priority, higher first, then by start,
// earlier first: kube-scheduler's MoreImportantPod.
func moreImportant(a, b *placedPod) int {
	if a.Priority != b.Priority {
		if a.Priority > b.Priority {
			return -1
		}
		return 1
	}
	return a.Start.Compare(b.Start)
}

// splitByBudgets is kube-scheduler's filterPodsWithPDBViolation: a pod
// whose eviction would take a budget that selects it below zero
// disruptions allowed violates it; a pod the budget already counts as
// disrupted does not count again.
func splitByBudgets(pods []*placedPod, budgets []*api.PodDisruptionBudget) (violating, nonViolating []*placedPod) {
	allowed := make([]int32, len(budgets))
	selectors := make([]labels.Selector, len(budgets))
	for i, b := range budgets {
		allowed[i] = b.Status.DisruptionsAllowed
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil {
			sel = labels.Nothing()
		}
		selectors[i] = sel
	}
	for _, p := range pods {
		violated := false
		if len(p.Labels) > 0 {
			for i, b := range budgets {
				if b.Namespace != p.Namespace || selectors[i].Empty() || !selectors[i].Matches(labels.Set(p.Labels)) {
					continue
				}
				if _, ok := b.Status.DisruptedPods[p.Name]; ok {
					continue
				}
				allowed[i]--
				if allowed[i] < 0 {
					violated = true
				}
			}
		}
		if violated {
			violating = append(violating, p)
		} else {
			nonViolating = append(nonViolating, p)
		}
	}
	return violating, nonViolating
}

// pickCandidate is kube-scheduler's pickOneNodeForPreemption.
func pickCandidate(cs []candidate) candidate {
	for _, c := range cs {
		if len(c.victims) == 0 {
			return c
		}
	}
	keep := func(score func(c *candidate) int64) {
		best := int64(math.MinInt64)
		var out []candidate
		for i := range cs {
			s := score(&cs[i])
			switch {
			case s > best:
				best, out = s, append(out[:0], cs[i])
			case s == best:
				out = append(out, cs[i])
			}
		}
		cs = out
	}
	// Fewest budgets broken.
	keep(func(c *candidate) int64 { return -int64(c.violating) })
	// Lowest highest priority (victims are sorted, the highest first).
	keep(func(c *candidate) int64 { return -int64(c.victims[0].Priority) })
	// Lowest sum of priorities, each shifted to be positive.
	keep(func(c *candidate) int64 {
		var sum int64
		for _, v := range c.victims {
			sum += int64(v.Priority) + math.MaxInt32 + 1
		}
		return -sum
	})
	// Fewest victims.
	keep(func(c *candidate) int64 { return -int64(len(c.victims)) })
	// The latest start among the earliest starts of the highest-priority
	// victims.
	keep(func(c *candidate) int64 {
		top := c.victims[0].Priority
		earliest := c.victims[0].Start
		for _, v := range c.victims {
			if v.Priority == top && v.Start.Before(earliest) {
				earliest = v.Start
			}
		}
		return earliest.UnixNano()
	})
	return cs[0]
}

// DisruptionTargetMessage is the message of the DisruptionTarget
// condition of a pod the scheduler preempts.
const DisruptionTargetMessage = api.DefaultSchedulerName + ": preempting to accommodate a higher priority pod"

// preemptedMessage is the Preempted event's, Kubernetes' words.
func preemptedMessage(preemptor *api.Pod, node string) string {
	return fmt.Sprintf("Preempted by pod %s on node %s", preemptor.UID, node)
}
