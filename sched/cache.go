package sched

import (
	"errors"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// errPlaced: the pod is already assumed or bound; a stale event queued it.
var errPlaced = errors.New("pod is already placed")

// inboxBatch is how many changes may wait in the inbox before the poster
// applies them itself.
const inboxBatch = 256

// cache is the scheduler's view of the nodes and of the pods placed on
// them, kept from store watches. A pod the scheduler has chosen a node for
// is assumed at once, before its binding is written, so the next pod
// already sees the room it took: two pods never both take the last room
// on a node. The binding then confirms it, or its failure forgets it.
//
// Changes from the watches and the binder are posted to an inbox and
// applied in order by whoever next holds the cache: the scheduling loop
// before each pod, or a poster whose change fills the inbox. So the
// watches never wait for a scheduling cycle, and the loop takes its lock
// uncontended.
type cache struct {
	mu    sync.Mutex
	nodes *Nodes
	// pods are keyed by UID: a pod deleted and created again under its
	// name is another pod, and both may hold room for a while.
	pods map[types.UID]*placedPod

	inboxMu sync.Mutex
	inbox   []change
	spare   []change
}

// change is one posted change to the cache.
type change struct {
	op     changeOp
	node   *api.Node
	pod    *api.Pod
	info   *PodInfo
	name   string
	uid    types.UID
	labels map[string]string
	budget *api.PodDisruptionBudget
}

type changeOp uint8

const (
	opSetNode changeOp = iota
	opRemoveNode
	opSetPod
	opRemovePod
	opConfirm
	opForget
	opSetNamespace
	opSetBudget
)

func newCache() *cache {
	return &cache{nodes: NewNodes(), pods: map[types.UID]*placedPod{}}
}

func (c *cache) post(ch change) {
	c.inboxMu.Lock()
	c.inbox = append(c.inbox, ch)
	full := len(c.inbox) >= inboxBatch
	c.inboxMu.Unlock()
	if full {
		c.mu.Lock()
		c.drain()
		c.mu.Unlock()
	}
}

// drain applies the posted changes; the caller holds mu.
func (c *cache) drain() {
	c.inboxMu.Lock()
	batch := c.inbox
	c.inbox, c.spare = c.spare[:0], nil
	c.inboxMu.Unlock()
	for i := range batch {
		c.apply(&batch[i])
		batch[i] = change{}
	}
	c.spare = batch[:0]
}

// locked runs fn on the cache brought up to date, for tests.
func (c *cache) locked(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drain()
	fn()
}

// schedule runs the framework over the nodes and assumes the pod on the
// chosen one, under one lock so that no other pod can take the room in
// between.
func (c *cache) schedule(fw *Framework, pod *PodInfo) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drain()
	if _, ok := c.pods[pod.UID]; ok {
		return Result{}, errPlaced
	}
	res, err := fw.Schedule(pod, c.nodes)
	var fitErr *FitError
	if errors.As(err, &fitErr) && len(c.nodes.list) > 0 {
		res.Preemption = fw.Preempt(pod, c.nodes, fitErr, c.nodes.budgetList())
		fitErr.PostFilterMsg = res.Preemption.Message
	}
	if err != nil {
		return res, err
	}
	p := pod.placed()
	p.attempt = pod
	p.node = c.nodes.AddPod(res.Node, p)
	c.pods[pod.UID] = p
	return res, nil
}

// confirm marks an assumed pod as bound: its binding is in the store.
func (c *cache) confirm(pod *PodInfo) { c.post(change{op: opConfirm, info: pod}) }

// forget takes back an assumption whose binding failed. A pod the watch
// has meanwhile seen bound (perhaps elsewhere) stays as the watch saw it.
func (c *cache) forget(pod *PodInfo) { c.post(change{op: opForget, info: pod}) }

// setNode adds or refreshes a node.
func (c *cache) setNode(node *api.Node) { c.post(change{op: opSetNode, node: node}) }

// removeNode takes a deleted node out of the list. Pods still bound to it
// keep their NodeInfo until they go.
func (c *cache) removeNode(name string) { c.post(change{op: opRemoveNode, name: name}) }

// setPod records a pod the store shows bound to a node. It confirms the
// pod if it was assumed there, and moves it if it is bound elsewhere.
func (c *cache) setPod(pod *api.Pod) { c.post(change{op: opSetPod, pod: pod}) }

// setNamespace records a namespace's labels; nil forgets the namespace.
func (c *cache) setNamespace(name string, labels map[string]string) {
	c.post(change{op: opSetNamespace, name: name, labels: labels})
}

// setBudget records a PodDisruptionBudget under namespace/name; nil
// forgets it.
func (c *cache) setBudget(key string, b *api.PodDisruptionBudget) {
	c.post(change{op: opSetBudget, name: key, budget: b})
}

// removePod stops counting a pod: deleted, or finished.
func (c *cache) removePod(uid types.UID) { c.post(change{op: opRemovePod, uid: uid}) }

// retainNodes and retainPods drop what a relist no longer shows, as of
// the changes posted before them; assumed pods stay, their bindings will
// tell.
func (c *cache) retainNodes(keep map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drain()
	var gone []string
	for _, n := range c.nodes.List() {
		if !keep[n.name] {
			gone = append(gone, n.name)
		}
	}
	for _, name := range gone {
		c.nodes.Remove(name)
	}
}

func (c *cache) retainPods(keep map[types.UID]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drain()
	for uid, p := range c.pods {
		if !keep[uid] && p.attempt == nil {
			c.unplace(p)
		}
	}
}

func (c *cache) apply(ch *change) {
	switch ch.op {
	case opSetNode:
		c.nodes.Set(ch.node)
	case opRemoveNode:
		c.nodes.Remove(ch.name)
	case opSetPod:
		c.applyPod(ch.pod)
	case opRemovePod:
		if p := c.pods[ch.uid]; p != nil {
			c.unplace(p)
		}
	case opConfirm:
		if p := c.pods[ch.info.UID]; p != nil && p.attempt == ch.info {
			p.attempt = nil
		}
	case opSetNamespace:
		c.nodes.SetNamespace(ch.name, ch.labels)
	case opSetBudget:
		c.nodes.SetBudget(ch.name, ch.budget)
	case opForget:
		if p := c.pods[ch.info.UID]; p != nil && p.attempt == ch.info {
			c.unplace(p)
		}
	}
}

func (c *cache) applyPod(pod *api.Pod) {
	terminating := pod.DeletionTimestamp != nil
	if p := c.pods[pod.UID]; p != nil {
		if p.node.name == pod.Spec.NodeName && p.Terminating == terminating &&
			maps.Equal(p.Labels, pod.Labels) && p.Owner == controllerOf(pod) {
			// Bound where it was assumed, or a change of a bound pod that
			// changes nothing the cache counts (a status): nothing to
			// place again. Its requests, ports and anti-affinity cannot
			// change: a pod's spec is immutable but for its images and
			// tolerations.
			p.attempt = nil
			return
		}
		// Moved, terminating, or relabelled or adopted, which other
		// pods' anti-affinity and spreading read: placed again.
		c.unplace(p)
	}
	p := &placedPod{podFacts: newPodFacts(pod)}
	p.node = c.nodes.AddPod(pod.Spec.NodeName, p)
	c.pods[pod.UID] = p
}

func (c *cache) unplace(p *placedPod) {
	c.nodes.RemovePod(p.node, p)
	delete(c.pods, p.UID)
}

// schedulingChanged reports whether a node update changed anything the
// filters and scores read. Heartbeats and status details do not, and they
// come from every node every few seconds.
func schedulingChanged(old, node *api.Node) bool {
	return old.Spec.Unschedulable != node.Spec.Unschedulable ||
		!slices.EqualFunc(old.Spec.Taints, node.Spec.Taints, func(a, b api.Taint) bool {
			return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
		}) ||
		!maps.Equal(old.Labels, node.Labels) ||
		resourcesOf(old.Status.Allocatable) != resourcesOf(node.Status.Allocatable) ||
		resourcesOf(old.Status.Capacity) != resourcesOf(node.Status.Capacity) ||
		!slices.Equal(conditionTaintKeys(old), conditionTaintKeys(node))
}
