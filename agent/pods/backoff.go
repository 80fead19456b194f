package pods

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

// Retry of what keeps a container from starting, rather than a crash:
// its pod's volumes not set up yet, most often a claim whose binding
// follows the pod's own, or its configuration not resolvable (a missing
// ConfigMap or key).
const (
	// volumeBackOffInitial and volumeBackOffMax bound the retry of a
	// pod's volume set-up: soon at first, since a claim binds a moment
	// after its pod, then every 10 s at most.
	volumeBackOffInitial = 500 * time.Millisecond
	volumeBackOffMax     = 10 * time.Second
	// startRetryPeriod is the wait before starting a container again
	// after its configuration could not be resolved or the runtime
	// refused it, as the kubelet waits 10 s between syncs of a pod that
	// failed: not the growing crash back-off, since nothing has run.
	startRetryPeriod = 10 * time.Second
)

// nextVolumeBackOff is the wait before setting up a pod's volumes again
// after the attempt that waited prev (zero for the first failure).
func nextVolumeBackOff(prev time.Duration) time.Duration {
	if prev <= 0 {
		return volumeBackOffInitial
	}
	return min(2*prev, volumeBackOffMax)
}
