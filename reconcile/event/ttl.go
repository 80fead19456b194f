package event

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// TTLName is the TTL controller's name in logs.
const TTLName = "event-ttl"

// DefaultTTL is how long an Event is kept after it was last recorded
// (--event-ttl), as in Kubernetes.
const DefaultTTL = time.Hour

// ttlKey is the TTL controller's only key: a pass looks at every event.
const ttlKey = "events"

// deleteBatch bounds the deletions of one transaction, so that a pass over
// many expired events does not hold the store's write lock for long.
const deleteBatch = 500

// TTLOptions configure the TTL controller.
type TTLOptions struct {
	// TTL is how long an event lives after its lastTimestamp; zero takes
	// DefaultTTL.
	TTL     time.Duration
	Clock   clock.WithTicker
	Backoff reconcile.Backoff
	Logger  *slog.Logger
}

// TTLReconciler deletes the events older than the TTL and asks to run
// again when the next one expires.
type TTLReconciler struct {
	store *store.Store
	ttl   time.Duration
	clock clock.PassiveClock
}

// NewTTLReconciler returns the reconciler alone, for tests and for
// callers that run it under their own Controller.
func NewTTLReconciler(s *store.Store, ttl time.Duration, c clock.PassiveClock) *TTLReconciler {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if c == nil {
		c = clock.RealClock{}
	}
	return &TTLReconciler{store: s, ttl: ttl, clock: c}
}

// NewTTLController returns the controller that keeps events for the TTL
// only: a pass at start, then whenever the oldest remaining event is due
// (at the latest one TTL later). Run it with Controller.Run(ctx, 1).
func NewTTLController(s *store.Store, opts TTLOptions) *reconcile.Controller {
	var c clock.PassiveClock
	if opts.Clock != nil {
		c = opts.Clock
	}
	r := NewTTLReconciler(s, opts.TTL, c)
	return reconcile.NewController(TTLName, r, reconcile.Options{
		Clock:    opts.Clock,
		Backoff:  opts.Backoff,
		Logger:   opts.Logger,
		ListKeys: func(context.Context) ([]string, error) { return []string{ttlKey}, nil },
	})
}

// Reconcile deletes every expired event. An event bumped since it was
// listed fails its resourceVersion precondition and is kept.
func (r *TTLReconciler) Reconcile(ctx context.Context, _ string) (reconcile.Result, error) {
	objs, _, err := r.store.List(eventKind, store.Filter{})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("list events: %w", err)
	}
	now := r.clock.Now()
	next := r.ttl
	var expired []*api.Event
	for _, o := range objs {
		ev := o.(*api.Event)
		left := Expiry(ev, r.ttl).Sub(now)
		if left <= 0 {
			expired = append(expired, ev)
			continue
		}
		next = min(next, left)
	}
	for len(expired) > 0 {
		n := min(len(expired), deleteBatch)
		if err := r.delete(ctx, expired[:n]); err != nil {
			return reconcile.Result{}, err
		}
		expired = expired[n:]
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

func (r *TTLReconciler) delete(ctx context.Context, evs []*api.Event) error {
	_, err := r.store.Txn(ctx, func(tx *store.Txn) error {
		for _, ev := range evs {
			_, err := tx.Delete(eventKind, ev.Namespace, ev.Name, store.DeleteOptions{
				Preconditions: &store.Preconditions{UID: string(ev.UID), ResourceVersion: ev.ResourceVersion},
			})
			if err != nil && !store.IsNotFound(err) && !store.IsConflict(err) {
				return fmt.Errorf("delete event %s/%s: %w", ev.Namespace, ev.Name, err)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("expire events: %w", err)
	}
	return nil
}

// Expiry is when an event is due for deletion: ttl after it was last
// recorded (lastTimestamp, else firstTimestamp, else its creation).
func Expiry(ev *api.Event, ttl time.Duration) time.Time {
	t := ev.LastTimestamp.Time
	if t.IsZero() {
		t = ev.FirstTimestamp.Time
	}
	if t.IsZero() {
		t = ev.CreationTimestamp.Time
	}
	return t.Add(ttl)
}
