package agent

import "time"

// Restart back-off of a crashing container, as the kubelet does it.
const (
	backOffInitial = 10 * time.Second
	backOffMax     = 5 * time.Minute
	// backOffReset is how long a run must last for its crash to count as
	// a fresh start rather than one more in a loop.
	backOffReset = 10 * time.Minute
)

// nextBackOff is how long to wait before restarting a container whose run
// just ended after ranFor, given the wait before that run (zero for none):
// 10s, 20s, 40s, … up to 5m, back to 10s once a run lasted 10 minutes.
func nextBackOff(prev, ranFor time.Duration) time.Duration {
	if prev <= 0 || ranFor >= backOffReset {
		return backOffInitial
	}
	next := 2 * prev
	if next > backOffMax {
		return backOffMax
	}
	return next
}
