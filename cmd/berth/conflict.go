package main

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// conflictAttempts bounds how often a command reads, changes and writes
// one object when another writer changes it in between (409 Conflict):
// a controller writing the object's status is such a writer, and one that
// always wins makes the command give up with the server's Conflict
// rather than spin.
const conflictAttempts = 5

// conflictTimer is what waits between those attempts; nil is the wall
// clock. Tests put a timer there that records the waits and fires at once.
var conflictTimer func() backoff.Timer

// retryLostRace runs write until it succeeds, fails with an error lost
// does not call a lost race, ctx ends, or conflictAttempts have all lost.
// Between attempts it backs off as client-go's retry.RetryOnConflict
// does: 10ms, doubling, jittered, so that writers that collide do not
// collide again at once.
func retryLostRace(ctx context.Context, lost func(error) bool, write func() error) error {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(10*time.Millisecond),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0.1),
		backoff.WithMaxInterval(time.Second),
		backoff.WithMaxElapsedTime(0),
	)
	var t backoff.Timer
	if conflictTimer != nil {
		t = conflictTimer()
	}
	return backoff.RetryNotifyWithTimer(func() error {
		err := write()
		if err != nil && !lost(err) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(backoff.WithMaxRetries(b, conflictAttempts-1), ctx), nil, t)
}
