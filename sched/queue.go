package sched

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
)

// Queue timings, kube-scheduler's: a pod that failed waits 1s, doubling
// per attempt up to 10s, before it is tried again; a pod no event has
// helped is tried again after 5 minutes anyway, checked every 30s.
const (
	initialBackoff         = time.Second
	maxBackoff             = 10 * time.Second
	maxUnschedulableTime   = 5 * time.Minute
	unschedulableFlushTick = 30 * time.Second
)

// Where a queued pod is.
const (
	inActive = iota
	inBackoff
	inUnschedulable
	inFlight
	removed
)

// queuedPod is a pending pod the queue knows, wherever it is.
type queuedPod struct {
	key string
	pod *api.Pod
	at  int
	// attempts counts scheduling attempts, for the back-off.
	attempts int
	// added is when the pod entered the queue, popped when its current
	// attempt began: the scheduler's latency metrics run from them.
	added, popped time.Time
	// timestamp is when the pod last came back from an attempt: back-off
	// runs from there, and so does its time in the unschedulable set.
	timestamp time.Time
	readyAt   time.Time // end of back-off, while in the back-off heap
	heapIndex int
	// moveSeq is the queue's move count when the pod was popped: a move
	// during the attempt must not be missed, so such a pod goes to
	// back-off, not to the unschedulable set.
	moveSeq uint64
	// updated: the pod's spec changed during the attempt.
	updated bool
	// priority is the pod's spec.priority, 0 if unset.
	priority int32
	// nominated: the pod preempted pods to make room and waits for it;
	// an event sends it back to the active queue without back-off.
	nominated bool
	// podWaiter: the pod has pod affinity terms or spread constraints,
	// so a pod placed anywhere may let it fit.
	podWaiter bool
}

// queue holds the pending pods: active ones by priority, then in arrival
// order, as kube-scheduler's active queue orders them; failed ones
// backing off, and unschedulable ones waiting for an event that could help
// them (a node added or changed, a pod on a node gone) or for five minutes
// to pass. Time comes from the injected clock.
type queue struct {
	clock clock.WithTicker

	mu            sync.Mutex
	pods          map[string]*queuedPod
	active        activeQueue
	backoff       backoffHeap
	unschedulable map[string]*queuedPod
	// podWaiters counts the unschedulable pods with podWaiter set.
	podWaiters int
	moves      uint64

	notify chan struct{} // a pod became active
	wake   chan struct{} // the back-off heap changed
}

func newQueue(clk clock.WithTicker) *queue {
	return &queue{
		clock:         clk,
		pods:          map[string]*queuedPod{},
		unschedulable: map[string]*queuedPod{},
		notify:        make(chan struct{}, 1),
		wake:          make(chan struct{}, 1),
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// add queues a new pending pod, or refreshes one already queued. A pod
// whose spec changed is worth trying again at once.
func (q *queue) add(pod *api.Pod) {
	key := pod.Namespace + "/" + pod.Name
	q.mu.Lock()
	defer q.mu.Unlock()
	qp := q.pods[key]
	if qp != nil && qp.pod.UID != pod.UID {
		q.removeLocked(qp)
		qp = nil
	}
	if qp == nil {
		qp = &queuedPod{key: key, pod: pod, added: q.clock.Now(), priority: podPriority(pod)}
		q.pods[key] = qp
		q.pushActive(qp)
		return
	}
	specChanged := pod.Generation != qp.pod.Generation
	qp.pod = pod
	if !specChanged {
		return
	}
	switch qp.at {
	case inFlight:
		qp.updated = true
	case inUnschedulable:
		q.moveLocked(qp, q.clock.Now())
	}
}

// delete forgets a pod that was deleted, bound, or is no longer ours.
func (q *queue) delete(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp := q.pods[key]; qp != nil {
		q.removeLocked(qp)
	}
}

func (q *queue) removeLocked(qp *queuedPod) {
	switch qp.at {
	case inBackoff:
		heap.Remove(&q.backoff, qp.heapIndex)
	case inUnschedulable:
		q.leaveUnschedulable(qp)
	case inActive:
		q.active.remove(qp) // popped lazily
	}
	qp.at = removed
	delete(q.pods, qp.key)
}

// pop waits for an active pod and hands it out for an attempt, with the
// pod object as it stands now.
func (q *queue) pop(ctx context.Context) (*queuedPod, *api.Pod, error) {
	for {
		q.mu.Lock()
		if qp := q.active.pop(); qp != nil {
			qp.at = inFlight
			qp.attempts++
			qp.popped = q.clock.Now()
			qp.moveSeq = q.moves
			qp.updated = false
			pod := qp.pod
			q.mu.Unlock()
			return qp, pod, nil
		}
		q.mu.Unlock()
		select {
		case <-q.notify:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// done forgets a pod whose attempt ended for good: it is bound, or gone.
func (q *queue) done(qp *queuedPod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp.at == inFlight {
		qp.at = removed
		delete(q.pods, qp.key)
	}
}

// addUnschedulable parks a pod no node could take until an event could
// help it; if one came during the attempt, or the pod changed, it backs
// off instead, so the event is not lost. A nominated pod (it preempted
// pods to make room) goes back without back-off on the next event.
func (q *queue) addUnschedulable(qp *queuedPod, nominated bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp.at != inFlight {
		return
	}
	qp.nominated = nominated
	qp.podWaiter = podWaiter(qp.pod)
	qp.timestamp = q.clock.Now()
	if qp.updated || q.moves != qp.moveSeq {
		q.pushBackoff(qp)
		return
	}
	qp.at = inUnschedulable
	q.unschedulable[qp.key] = qp
	if qp.podWaiter {
		q.podWaiters++
	}
}

// podWaiter reports whether a pod placed may let pod fit: it has pod
// affinity terms or topology spread constraints, as kube-scheduler's
// InterPodAffinity and PodTopologySpread ask to hear of pods added.
func podWaiter(pod *api.Pod) bool {
	a := pod.Spec.Affinity
	return len(pod.Spec.TopologySpreadConstraints) > 0 || a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil)
}

// movePodWaiters sends back the unschedulable pods a placed pod may help
// (podWaiter), when there are any.
func (q *queue) movePodWaiters() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.podWaiters == 0 {
		return
	}
	q.moves++
	now := q.clock.Now()
	for _, qp := range q.unschedulable {
		if qp.podWaiter {
			q.moveLocked(qp, now)
		}
	}
}

// retry backs a pod off after an error (a failed binding, a store error).
func (q *queue) retry(qp *queuedPod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp.at != inFlight {
		return
	}
	qp.timestamp = q.clock.Now()
	q.pushBackoff(qp)
}

// moveAll sends every unschedulable pod back: at once if its back-off is
// over, else to the back-off heap.
func (q *queue) moveAll() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moves++
	now := q.clock.Now()
	for _, qp := range q.unschedulable {
		q.moveLocked(qp, now)
	}
}

func (q *queue) moveLocked(qp *queuedPod, now time.Time) {
	q.leaveUnschedulable(qp)
	if !qp.nominated && now.Before(qp.timestamp.Add(backoffDuration(qp.attempts))) {
		q.pushBackoff(qp)
		return
	}
	q.pushActive(qp)
}

// flushBackoff moves the pods whose back-off is over by now to the active
// queue. It returns when the next back-off ends, if a pod is backing off.
func (q *queue) flushBackoff(now time.Time) (next time.Time, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.backoff) > 0 && !q.backoff[0].readyAt.After(now) {
		q.pushActive(heap.Pop(&q.backoff).(*queuedPod))
	}
	if len(q.backoff) > 0 {
		return q.backoff[0].readyAt, true
	}
	return time.Time{}, false
}

// flushUnschedulable sends back the pods that have waited in the
// unschedulable set longer than five minutes.
func (q *queue) flushUnschedulable(now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, qp := range q.unschedulable {
		if now.Sub(qp.timestamp) > maxUnschedulableTime {
			q.moveLocked(qp, now)
		}
	}
}

// run flushes back-offs as they end, and the unschedulable set every 30s,
// until ctx ends.
func (q *queue) run(ctx context.Context) {
	sweep := q.clock.NewTicker(unschedulableFlushTick)
	defer sweep.Stop()
	for {
		now := q.clock.Now()
		next, ok := q.flushBackoff(now)
		var (
			timer clock.Timer
			fired <-chan time.Time
		)
		if ok {
			timer = q.clock.NewTimer(next.Sub(now))
			fired = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-fired:
		case <-q.wake:
		case <-sweep.C():
			q.flushUnschedulable(q.clock.Now())
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

func (q *queue) pushActive(qp *queuedPod) {
	qp.at = inActive
	q.active.push(qp)
	signal(q.notify)
}

func (q *queue) pushBackoff(qp *queuedPod) {
	qp.at = inBackoff
	qp.readyAt = qp.timestamp.Add(backoffDuration(qp.attempts))
	heap.Push(&q.backoff, qp)
	signal(q.wake)
}

// backoffDuration is 1s after the first attempt, doubling to at most 10s.
func backoffDuration(attempts int) time.Duration {
	d := initialBackoff
	for i := 1; i < attempts && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// counts returns how many pods are active, backing off, unschedulable and
// in flight.
func (q *queue) counts() (active, backoff, unschedulable, inFlight int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	active, backoff, unschedulable = q.active.len(), len(q.backoff), len(q.unschedulable)
	return active, backoff, unschedulable, len(q.pods) - active - backoff - unschedulable
}

// leaveUnschedulable takes qp out of the unschedulable set.
func (q *queue) leaveUnschedulable(qp *queuedPod) {
	if _, ok := q.unschedulable[qp.key]; ok && qp.podWaiter {
		q.podWaiters--
	}
	delete(q.unschedulable, qp.key)
}

// podPriority is the pod's priority, 0 when admission gave it none.
func podPriority(pod *api.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// activeQueue is the active queue: a FIFO per priority, the highest
// first. A cluster has few priorities, so they are a short sorted list.
type activeQueue struct {
	buckets []priorityBucket
}

type priorityBucket struct {
	priority int32
	fifo
}

func (a *activeQueue) bucket(priority int32) *fifo {
	for i := range a.buckets {
		switch b := &a.buckets[i]; {
		case b.priority == priority:
			return &b.fifo
		case b.priority < priority:
			a.buckets = append(a.buckets, priorityBucket{})
			copy(a.buckets[i+1:], a.buckets[i:])
			a.buckets[i] = priorityBucket{priority: priority}
			return &a.buckets[i].fifo
		}
	}
	a.buckets = append(a.buckets, priorityBucket{priority: priority})
	return &a.buckets[len(a.buckets)-1].fifo
}

func (a *activeQueue) push(qp *queuedPod) { a.bucket(qp.priority).push(qp) }

// remove counts out a pod that left the active queue otherwise than by
// pop; its slot is skipped when it reaches the front.
func (a *activeQueue) remove(qp *queuedPod) { a.bucket(qp.priority).n-- }

// pop returns the first pod of the highest priority, nil if none.
func (a *activeQueue) pop() *queuedPod {
	for i := range a.buckets {
		f := &a.buckets[i].fifo
		if f.n == 0 {
			if len(f.items) > 0 {
				// Only removed pods' slots are left: let them go.
				clear(f.items)
				f.items, f.head = f.items[:0], 0
			}
			continue
		}
		if qp := f.pop(); qp != nil {
			return qp
		}
	}
	return nil
}

func (a *activeQueue) len() int {
	n := 0
	for i := range a.buckets {
		n += a.buckets[i].n
	}
	return n
}

// fifo is one priority's active pods: arrival order, with removals done
// lazily (a removed pod is skipped when it reaches the front).
type fifo struct {
	items []*queuedPod
	head  int
	n     int
}

func (f *fifo) push(qp *queuedPod) {
	f.items = append(f.items, qp)
	f.n++
}

func (f *fifo) pop() *queuedPod {
	for f.head < len(f.items) {
		qp := f.items[f.head]
		f.items[f.head] = nil
		f.head++
		if f.head > 1024 && f.head*2 > len(f.items) {
			n := copy(f.items, f.items[f.head:])
			clear(f.items[n:]) // the moved pods' old slots would keep them
			f.items, f.head = f.items[:n], 0
		}
		if qp.at == inActive {
			f.n--
			return qp
		}
	}
	return nil
}

// backoffHeap orders backing-off pods by when their back-off ends.
type backoffHeap []*queuedPod

func (h backoffHeap) Len() int           { return len(h) }
func (h backoffHeap) Less(i, j int) bool { return h[i].readyAt.Before(h[j].readyAt) }
func (h backoffHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = i, j
}
func (h *backoffHeap) Push(x any) {
	qp := x.(*queuedPod)
	qp.heapIndex = len(*h)
	*h = append(*h, qp)
}
func (h *backoffHeap) Pop() any {
	old := *h
	qp := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return qp
}

// retain forgets the pods a relist no longer shows pending.
func (q *queue) retain(keep map[string]bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for key, qp := range q.pods {
		if !keep[key] {
			q.removeLocked(qp)
		}
	}
}
