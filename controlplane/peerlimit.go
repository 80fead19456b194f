package controlplane

import (
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Bounds of the failures an unauthenticated endpoint forgives each source
// address: a burst, then one every failureEvery. A source past them is
// refused (429) until it has a failure to spend again; each keeps a
// limiter for as long as it has not refilled, and at most maxPeers are
// kept (past that, the new ones share one).
const (
	failureBurst = 10
	failureEvery = 6 * time.Second
	maxPeers     = 4096
)

// Bounds of the log lines of refusals, all sources together: a source
// that rotates its address still writes no more than these.
const (
	refusalLogBurst = 20
	refusalLogEvery = time.Second
)

// peerLimiter counts the failed attempts of each source address at an
// endpoint anyone may call (a webhook's bad signatures), so that a flood of
// them costs the server neither its log nor the reading of their bodies:
// past the burst a source is answered 429 before its request is read,
// and the log says so once rather than once a request. Time is the
// clock's, so that tests drive it.
type peerLimiter struct {
	clock clock.PassiveClock
	every time.Duration
	burst int
	max   int

	mu    sync.Mutex
	peers map[netip.Prefix]*peer
	// log paces the refusals' log lines; suppressed counts those withheld
	// since the last one written.
	log        *rate.Limiter
	suppressed int
}

type peer struct {
	lim *rate.Limiter
	// last is when the peer last failed: a limiter untouched for
	// burst*every is full again, as good as none.
	last time.Time
	// refused says the peer's refusal was logged, so that it is logged
	// once until the peer may try again.
	refused bool
}

func newPeerLimiter(clk clock.PassiveClock) *peerLimiter {
	return &peerLimiter{
		clock: clk,
		every: failureEvery,
		burst: failureBurst,
		max:   maxPeers,
		peers: map[netip.Prefix]*peer{},
		log:   rate.NewLimiter(rate.Every(refusalLogEvery), refusalLogBurst),
	}
}

// overflow is the key the sources share once maxPeers are kept.
var overflow = netip.Prefix{}

// peerKey is the source a request comes from: its IPv4 address, or its
// IPv6 /64, which one machine commonly holds whole.
func peerKey(remoteAddr string) netip.Prefix {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return overflow
	}
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// wait is how long the source must wait before its next request is heard:
// zero while it has a failure left to spend.
func (l *peerLimiter) wait(key netip.Prefix) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.lookup(key)
	if p == nil {
		return 0
	}
	tokens := p.lim.TokensAt(l.clock.Now())
	if tokens >= 1 {
		p.refused = false
		return 0
	}
	return time.Duration((1 - tokens) * float64(l.every))
}

// fail spends one of the source's failures.
func (l *peerLimiter) fail(key netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	p := l.peers[key]
	if p == nil && len(l.peers) >= l.max {
		l.expire(now)
		if len(l.peers) >= l.max {
			key = overflow
			p = l.peers[key]
		}
	}
	if p == nil {
		p = &peer{lim: rate.NewLimiter(rate.Every(l.every), l.burst)}
		l.peers[key] = p
	}
	p.lim.AllowN(now, 1)
	p.last = now
}

// lookup is the source's limiter, or the one the sources past maxPeers
// share, or nil if it has none.
func (l *peerLimiter) lookup(key netip.Prefix) *peer {
	if p := l.peers[key]; p != nil {
		return p
	}
	if len(l.peers) >= l.max {
		return l.peers[overflow]
	}
	return nil
}

// expire forgets the sources whose limiters are full again.
func (l *peerLimiter) expire(now time.Time) {
	full := time.Duration(l.burst) * l.every
	for k, p := range l.peers {
		if now.Sub(p.last) >= full {
			delete(l.peers, k)
		}
	}
}

// logRefusal reports whether a refusal of the source may be logged now,
// and how many were withheld since the last one logged. A source being
// refused (429) is logged once until it may try again.
func (l *peerLimiter) logRefusal(key netip.Prefix, throttled bool) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if throttled {
		p := l.lookup(key)
		if p == nil || p.refused {
			l.suppressed++
			return false, 0
		}
		p.refused = true
	}
	if !l.log.AllowN(l.clock.Now(), 1) {
		l.suppressed++
		return false, 0
	}
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// retryAfter is a wait in whole seconds, as Retry-After has it: at least 1.
func retryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
