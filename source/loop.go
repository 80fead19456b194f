package source

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
	"k8s.io/utils/clock"
)

// Signal is a request for a check that never blocks its sender: requests
// made while one is pending are folded into it.
type Signal chan struct{}

// NewSignal makes a Signal.
func NewSignal() Signal { return make(Signal, 1) }

// Fire asks for a check; it never blocks.
func (s Signal) Fire() {
	select {
	case s <- struct{}{}:
	default:
	}
}

// Check reads a source once. It returns the revision it read (ID, Objects,
// Errors) or one with Err when it could not read; Loop sets Time. have is
// the ID of the revision the receiver already holds, "" when it needs one
// whatever it is (at start, after a failure, on Trigger): when the check
// finds have again it may return the ID alone and skip decoding, because
// Loop will not send it.
type Check func(ctx context.Context, have string) Revision

// Retry bounds of a failed check: the first retry comes after
// RetryInitial, each later one after twice as long, never later than the
// source's interval.
const (
	RetryInitial = 2 * time.Second
	RetryMax     = 5 * time.Minute
)

// Loop is the run loop every source shares: a check at start, at every
// interval (with jitter), on Trigger, after a burst of hints has gone
// quiet (a dir source's file events), and sooner than the interval after
// a failure, with exponential back-off. It sends what the checks read,
// except a successful revision identical to the one it sent last, unless
// a Trigger asked for it.
type Loop struct {
	// Clock times the interval, the debounce and the back-off.
	Clock clock.WithTicker
	// Interval is the period between checks.
	Interval time.Duration
	// Jitter spreads each interval by up to ±Jitter of it (0.05 is ±5%),
	// so that many sources started together do not poll together.
	Jitter float64
	// Rand draws the jitter; nil seeds one from the clock.
	Rand *rand.Rand
	// Debounce is the quiet period after the last hint before a check.
	Debounce time.Duration
	// Logger receives one line per revision sent and per failure.
	Logger *slog.Logger
	// Check reads the source.
	Check Check
	// Triggered, when set, reads the source for a Trigger instead of
	// Check: an http source then asks for the document whole, where its
	// polls ask only whether it changed.
	Triggered Check

	hinted func() // tests: called once a hint has restarted the debounce
}

// Run checks and sends until ctx is done; it then returns nil. trigger
// forces a check whose result is sent even when unchanged; hints (nil for
// none) ask for a check after Debounce of quiet.
func (l *Loop) Run(ctx context.Context, out chan<- Revision, trigger, hints <-chan struct{}) error {
	if l.Interval <= 0 || l.Clock == nil || l.Check == nil {
		return errors.New("source loop: no interval, clock or check")
	}
	log := l.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rnd := l.Rand
	if rnd == nil {
		seed := uint64(l.Clock.Now().UnixNano())
		rnd = rand.New(rand.NewPCG(seed, seed>>1^0x9e3779b97f4a7c15))
	}
	bo := backoff.NewExponentialBackOff(
		backoff.WithClockProvider(l.Clock),
		backoff.WithInitialInterval(RetryInitial),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0.1),
		backoff.WithMaxInterval(min(RetryMax, l.Interval)),
		backoff.WithMaxElapsedTime(0),
	)

	var (
		have    string // the ID of the last revision sent, if it succeeded
		failing bool
	)
	var poll, quiet clock.Timer // made at their first use
	var pollC, quietC <-chan time.Time
	defer func() {
		for _, t := range []clock.Timer{poll, quiet} {
			if t != nil {
				t.Stop()
			}
		}
	}()

	check := func(forced bool) bool {
		want := have
		if forced {
			want = ""
		}
		read := l.Check
		if forced && l.Triggered != nil {
			read = l.Triggered
		}
		rev := read(ctx, want)
		if ctx.Err() != nil {
			return false
		}
		rev.Time = l.Clock.Now()
		var next time.Duration
		if rev.Err != nil {
			next = min(bo.NextBackOff(), l.Interval)
			if !failing {
				log.Warn("source check failed", "err", rev.Err, "retry", next)
			} else {
				log.Debug("source check failed again", "err", rev.Err, "retry", next)
			}
			failing = true
		} else {
			bo.Reset()
			next = l.jittered(rnd)
			if failing {
				log.Info("source check recovered", "revision", rev.ID)
			}
			failing = false
		}
		poll = restart(l.Clock, poll, next)
		pollC = poll.C()

		if rev.Err == nil && want != "" && rev.ID == want {
			return true // the receiver has it
		}
		if rev.Err == nil {
			log.Debug("source revision", "revision", rev.ID, "objects", len(rev.Objects), "errors", len(rev.Errors), "forced", forced)
		}
		select {
		case out <- rev:
		case <-ctx.Done():
			return false
		}
		have = ""
		if rev.Err == nil {
			have = rev.ID
		}
		return true
	}

	if !check(false) {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-trigger:
			if !check(true) {
				return nil
			}
		case <-pollC:
			if !check(false) {
				return nil
			}
		case <-hints:
			quiet = restart(l.Clock, quiet, l.Debounce)
			quietC = quiet.C()
			if l.hinted != nil {
				l.hinted()
			}
		case <-quietC:
			quietC = nil
			if !check(false) {
				return nil
			}
		}
	}
}

// jittered returns the interval spread by up to ±Jitter.
func (l *Loop) jittered(rnd *rand.Rand) time.Duration {
	if l.Jitter <= 0 {
		return l.Interval
	}
	f := 1 + l.Jitter*(2*rnd.Float64()-1)
	return time.Duration(float64(l.Interval) * f)
}

// restart makes t fire after d, making it when nil, and drops a tick it
// may have left unread (the fake clock's timers keep one).
func restart(c clock.Clock, t clock.Timer, d time.Duration) clock.Timer {
	if t == nil {
		return c.NewTimer(d)
	}
	if !t.Stop() {
		select {
		case <-t.C():
		default:
		}
	}
	t.Reset(d)
	return t
}
