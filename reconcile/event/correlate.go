package event

import (
	"container/list"
	"time"

	"github.com/berth-dev/berth/api"
)

// correlationKey is what makes two events the same Event: a repeat within
// the window bumps the count and lastTimestamp of the one already written.
type correlationKey struct {
	source            api.EventSource
	object            api.ObjectReference
	eventType, reason string
	message           string
}

// limitKey is what the rate limit counts per: one component on one object,
// as Kubernetes' event spam filter does.
type limitKey struct {
	source api.EventSource
	object api.ObjectReference
}

// seen is what the correlator remembers of the last Event of a key: a hint
// checked against the store, so that a transaction that did not commit
// leaves nothing wrong behind.
type seen struct {
	name string
	last time.Time
}

// bucket is a token bucket: burst tokens, one more every refill.
type bucket struct {
	tokens float64
	at     time.Time
}

// take refills the bucket for the time since it was last used and takes a
// token if there is one.
func (b *bucket) take(now time.Time, burst int, refill time.Duration) bool {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(float64(burst), b.tokens+float64(d)/float64(refill))
		b.at = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// lru is a map bounded to size entries, forgetting the least recently used:
// the correlator and the rate limiter must not grow with every object the
// cluster ever had.
type lru[K comparable, V any] struct {
	size  int
	order *list.List // of *lruEntry, most recent first
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](size int) *lru[K, V] {
	return &lru[K, V]{size: size, order: list.New(), items: map[K]*list.Element{}}
}

// get returns the value of k, marking it recently used.
func (c *lru[K, V]) get(k K) (V, bool) {
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*lruEntry[K, V]).val, true
	}
	var zero V
	return zero, false
}

// put sets the value of k, forgetting the oldest entry past size.
func (c *lru[K, V]) put(k K, v V) {
	if e, ok := c.items[k]; ok {
		e.Value.(*lruEntry[K, V]).val = v
		c.order.MoveToFront(e)
		return
	}
	c.items[k] = c.order.PushFront(&lruEntry[K, V]{key: k, val: v})
	if c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry[K, V]).key)
	}
}

func (c *lru[K, V]) len() int { return c.order.Len() }
