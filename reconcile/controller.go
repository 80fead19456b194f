package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
)

// Reconciler converges one object, named by its key, toward its spec. It is
// the only thing a controller author writes: the Controller around it brings
// the queue, workers, retries and resync. Reconcile must read the current
// state rather than trust why it was called, so that running it twice does
// nothing the second time.
type Reconciler interface {
	Reconcile(ctx context.Context, key string) (Result, error)
}

// ReconcilerFunc lets a plain function be a Reconciler, for small controllers
// and tests.
type ReconcilerFunc func(ctx context.Context, key string) (Result, error)

// Reconcile calls f.
func (f ReconcilerFunc) Reconcile(ctx context.Context, key string) (Result, error) {
	return f(ctx, key)
}

// Result tells the Controller what to do with a key after a successful
// Reconcile. It is ignored when Reconcile returns an error, because the error
// decides: retry with back-off, or, if Terminal, drop.
type Result struct {
	// RequeueAfter, if positive, looks at the key again after this long,
	// for state that changes with time rather than with writes (a deadline,
	// a probe, a rollout step).
	RequeueAfter time.Duration
}

// terminalError marks an error that retrying cannot fix.
type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// Terminal marks err as one that retrying cannot fix, such as an invalid
// spec, so the Controller records it and drops the key instead of retrying it
// forever; the next change to the object enqueues it again. Terminal(nil) is
// nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err, or any error it wraps, was marked Terminal.
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}

// Options configure a Controller. The zero value is usable: the real clock,
// the default back-off, no resync and slog.Default().
type Options struct {
	// Clock drives back-off, delayed requeues and resync; tests pass a
	// fake one.
	Clock clock.WithTicker
	// Backoff shapes retries of failing keys.
	Backoff Backoff
	// ListKeys returns the key of every object the controller owns. Run
	// enqueues them all when it starts and, if ResyncPeriod is positive,
	// every ResyncPeriod, so that a missed event or a drifted object is
	// converged eventually.
	ListKeys func(ctx context.Context) ([]string, error)
	// ResyncPeriod is how often ListKeys is enqueued again; zero means
	// only at start.
	ResyncPeriod time.Duration
	// Logger receives reconcile failures. Nil means slog.Default().
	Logger *slog.Logger
	// Store and Watches feed the queue from store watches: Run lists and
	// follows each watch until ctx is done.
	Store   *store.Store
	Watches []Watch
	// Informers, if set, serves the watches from the process's shared
	// informers of Store; nil gives the Controller informers of its own.
	Informers *informer.Factory
}

// Stats counts what a Controller's workers did, so tests can see retries
// and drops without scraping logs; Metrics exports the same to Prometheus.
type Stats struct {
	Reconciles uint64 // calls to Reconcile, including failed and panicked ones
	Errors     uint64 // calls that returned an error or panicked, Terminal ones included
	Terminal   uint64 // errors marked Terminal: recorded and dropped, not retried
	Requeues   uint64 // keys put back: retried after an error, or on Result.RequeueAfter
}

// Controller runs a Reconciler over a work queue of keys with a pool of
// workers, the runtime every berth controller shares. Event handlers only
// Enqueue keys; workers pop them, call Reconcile, and retry failures with
// back-off. The queue guarantees a key is reconciled by one worker at a time.
type Controller struct {
	name         string
	reconciler   Reconciler
	queue        *Queue
	clock        clock.WithTicker
	listKeys     func(ctx context.Context) ([]string, error)
	resyncPeriod time.Duration
	store        *store.Store
	watches      []Watch
	informers    *informer.Factory
	log          *slog.Logger
	started      atomic.Bool
	counts       struct{ reconciles, errors, terminal, requeues atomic.Uint64 }
	metrics      atomic.Pointer[controllerMetrics] // nil until Metrics.Instrument
}

// NewController returns a Controller named name, which appears in its logs,
// that feeds keys to r. Its queue accepts keys at once; Run starts the
// workers.
func NewController(name string, r Reconciler, opts Options) *Controller {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Controller{
		name:         name,
		reconciler:   r,
		queue:        NewQueue(opts.Clock, opts.Backoff),
		clock:        opts.Clock,
		listKeys:     opts.ListKeys,
		resyncPeriod: opts.ResyncPeriod,
		store:        opts.Store,
		watches:      opts.Watches,
		informers:    opts.Informers,
		log:          opts.Logger.With("controller", name),
	}
}

// ShareInformers makes Run serve the watches from f, the process's shared
// informers of the Controller's store, rather than informers of its own.
// Call it before Run.
func (c *Controller) ShareInformers(f *informer.Factory) { c.informers = f }

// Name returns the name the Controller logs under.
func (c *Controller) Name() string { return c.name }

// Enqueue asks for key to be reconciled. It is what watch handlers call; many
// Enqueues of one key before a worker reaches it cost one reconcile.
func (c *Controller) Enqueue(key string) { c.queue.Add(key) }

// EnqueueAfter asks for key to be reconciled once d has passed on the
// Controller's clock; if the key is already waiting, the earlier time wins.
func (c *Controller) EnqueueAfter(key string, d time.Duration) { c.queue.AddAfter(key, d) }

// Stats returns the Controller's counters so far.
func (c *Controller) Stats() Stats {
	return Stats{
		Reconciles: c.counts.reconciles.Load(),
		Errors:     c.counts.errors.Load(),
		Terminal:   c.counts.terminal.Load(),
		Requeues:   c.counts.requeues.Load(),
	}
}

// Run starts that many workers and the resync, and blocks until ctx is done;
// it then shuts the queue down and waits for every worker to finish its
// current key before returning. A Controller runs once.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if workers < 1 {
		return fmt.Errorf("controller %s: need at least one worker, got %d", c.name, workers)
	}
	if len(c.watches) > 0 && c.store == nil {
		return fmt.Errorf("controller %s: watches need a store", c.name)
	}
	if !c.started.CompareAndSwap(false, true) {
		return fmt.Errorf("controller %s: already run", c.name)
	}
	remove := func() {}
	if len(c.watches) > 0 {
		informers := c.informers
		if informers == nil {
			informers = informer.NewFactory(c.store, c.clock, c.log)
			informers.Start(ctx)
			defer informers.Wait()
		}
		var err error
		if remove, err = informers.Register(c.registrations()...); err != nil {
			return fmt.Errorf("controller %s: %w", c.name, err)
		}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	if c.listKeys != nil {
		wg.Go(func() { c.resync(ctx) })
	}
	<-ctx.Done()
	remove()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// processNext reconciles one key and decides its future. It returns false
// when the queue is shut down.
func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get(ctx)
	if shutdown {
		return false
	}
	defer c.queue.Done(key)

	res, err := c.reconcile(ctx, key)
	c.counts.reconciles.Add(1)
	c.metrics.Load().observe(res, err)
	switch {
	case err == nil:
		c.queue.Forget(key)
		if res.RequeueAfter > 0 {
			c.counts.requeues.Add(1)
			c.queue.AddAfter(key, res.RequeueAfter)
		}
	case IsTerminal(err):
		c.counts.errors.Add(1)
		c.counts.terminal.Add(1)
		c.queue.Forget(key)
		c.log.Error("reconcile failed, not retrying", "key", key, "err", err)
	default:
		c.counts.errors.Add(1)
		c.counts.requeues.Add(1)
		c.queue.AddRateLimited(key)
		if ctx.Err() != nil {
			break // stopping: the error is most likely the cancellation itself
		}
		level := slog.LevelError
		switch {
		case store.IsConflict(err):
			// Another writer got there first: the retry reads again and
			// converges. Routine among controllers, so not an error.
			level = slog.LevelDebug
		case store.IsForbidden(err), errors.Is(err, store.ErrInvalid):
			// The store refused a write (a quota, a namespace being
			// deleted, a validation): an expected state of the cluster
			// that the reconciler reports on the object (a condition, an
			// event), not a fault of the controller. Kubernetes' deployment
			// controller logs its retries at info level too.
			level = slog.LevelInfo
		}
		c.log.Log(ctx, level, "reconcile failed, will retry", "key", key, "err", err,
			"requeues", c.queue.NumRequeues(key))
	}
	return true
}

// reconcile calls the Reconciler, turning a panic into an error so that one
// bad object costs a retry, not the process.
func (c *Controller) reconcile(ctx context.Context, key string) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("reconcile panicked", "key", key, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("reconcile %s: panic: %v", key, r)
		}
	}()
	return c.reconciler.Reconcile(ctx, key)
}

// resync enqueues every key now and then every resyncPeriod until ctx is
// done.
func (c *Controller) resync(ctx context.Context) {
	var tick <-chan time.Time
	if c.resyncPeriod > 0 {
		// Started before the first listing, so periods count from Run.
		t := c.clock.NewTicker(c.resyncPeriod)
		defer t.Stop()
		tick = t.C()
	}
	for {
		c.enqueueAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

func (c *Controller) enqueueAll(ctx context.Context) {
	keys, err := c.listKeys(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error("resync: list keys failed", "err", err)
		}
		return
	}
	for _, key := range keys {
		c.queue.Add(key)
	}
}
