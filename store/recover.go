package store

import (
	"time"

	"k8s.io/utils/clock"
)

// Recoverable is a Backend whose failed Commit wrote nothing of it, as a
// bolt transaction that fails rolls back whole: a disk that was full, or
// a file system that refused a write for a while. The store then forgets
// the writes it had not made durable (their writers were told they
// failed), refuses writes, and probes the backend with a back-off until
// it writes again, then takes writes again from its last durable
// revision, as etcd does once its disk has room, with no restart.
type Recoverable interface {
	Backend
	// Probe makes a durable write that changes nothing the store
	// holds, to learn whether the backend writes again. The store calls
	// it from its commit goroutine, in turn with Commit.
	Probe() error
}

// Back-off of the probes of a failed Recoverable backend.
const (
	recoverMinBackoff = 500 * time.Millisecond
	recoverMaxBackoff = 30 * time.Second
)

// wakeRecovery logs the failure that stops writes and wakes the recovery,
// if the backend has one.
func (s *Store) wakeRecovery(err error) {
	if s.failedCh == nil {
		s.opts.Logger.Error("store cannot write; refusing further writes", "err", err)
		return
	}
	s.opts.Logger.Error("store cannot write; refusing writes until the backend writes again", "err", err)
	select {
	case s.failedCh <- struct{}{}:
	default:
	}
}

// recoverLoop waits for the backend to fail a write, then probes it, on
// c, after back-offs that double from recoverMinBackoff to
// recoverMaxBackoff, until a probe succeeds; then the store takes writes
// again. It runs until Close.
func (s *Store) recoverLoop(r Recoverable, c clock.Clock) {
	defer close(s.recoverDone)
	for {
		select {
		case <-s.recoverStop:
			return
		case <-s.failedCh:
		}
		since := c.Now()
		wait := recoverMinBackoff
		warned := ""
		for {
			t := c.NewTimer(wait)
			select {
			case <-s.recoverStop:
				t.Stop()
				return
			case <-t.C():
			}
			wait = min(2*wait, recoverMaxBackoff)
			closed, err := s.tryRecover()
			if closed {
				return
			}
			if err == nil {
				s.opts.Logger.Info("store writes again", "after", c.Since(since).Round(time.Millisecond), "revision", s.Revision())
				break
			}
			if msg := err.Error(); msg != warned {
				warned = msg
				s.opts.Logger.Warn("store still cannot write; retrying", "err", err, "in", wait)
			}
		}
	}
}

// tryRecover probes the backend, and when it writes, rolls the store's
// tables back to the last durable revision and clears the failure. It
// holds writeMu throughout, so that no write begins meanwhile; every
// batch sent before it has failed by the time the commit loop answers
// the probe, which it sends behind them.
func (s *Store) tryRecover() (closed bool, err error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.closed {
		return true, nil
	}
	p := &batch{probe: true, done: make(chan error, 1)}
	s.commits <- p
	if err := <-p.done; err != nil {
		return false, err
	}
	v := s.view.Load()
	s.db = v.db.Snapshot()
	s.rev = v.rev
	s.failed.Store(nil)
	return false, nil
}
