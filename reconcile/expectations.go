package reconcile

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ExpectationsTimeout is how long a controller waits for the watch to show
// its own writes before it stops trusting its expectations and syncs
// anyway, as Kubernetes does: a lost event must not stall a controller
// forever.
const ExpectationsTimeout = 5 * time.Minute

// Expectations remember, per controller key, the pod creations and
// deletions a sync has asked for and the watch has not yet shown, so that
// the next sync, which reads a store that may not yet reflect them through
// the watch, does not create or delete the same pods again. It is
// Kubernetes' ControllerExpectations, with deletions tracked by pod key so
// that the mark of a deletion and the deletion itself count once.
type Expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	byKey map[string]*expectation
}

type expectation struct {
	adds      int
	deletions map[string]struct{}
	at        time.Time
}

// NewExpectations returns empty Expectations timed by c.
func NewExpectations(c clock.PassiveClock) *Expectations {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Expectations{clock: c, byKey: map[string]*expectation{}}
}

// Satisfied reports whether the controller named key may sync: nothing is
// outstanding, nothing was ever expected, or the expectations expired.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.byKey[key]
	if !ok {
		return true
	}
	if x.adds <= 0 && len(x.deletions) == 0 {
		return true
	}
	return e.clock.Since(x.at) > ExpectationsTimeout
}

// ExpectCreations records that the controller is about to create n pods,
// replacing whatever it expected before.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byKey[key] = &expectation{adds: n, at: e.clock.Now()}
}

// ExpectDeletions records that the controller is about to delete the pods
// with these keys, replacing whatever it expected before.
func (e *Expectations) ExpectDeletions(key string, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{deletions: make(map[string]struct{}, len(podKeys)), at: e.clock.Now()}
	for _, k := range podKeys {
		x.deletions[k] = struct{}{}
	}
	e.byKey[key] = x
}

// CreationObserved lowers the creations expected by one: the watch showed a
// pod, or a creation failed and will never show.
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.byKey[key]; ok && x.adds > 0 {
		x.adds--
	}
}

// DeletionObserved strikes a pod off the deletions expected: the watch
// showed it marked or gone, or its deletion failed.
func (e *Expectations) DeletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.byKey[key]; ok {
		delete(x.deletions, podKey)
	}
}

// Forget drops what is expected of a controller that is gone.
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}
