package notify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds one delivery: the longest a receiver that
	// does not answer holds its Alert's queue.
	DefaultTimeout = 10 * time.Second
	// DefaultRetryBase and DefaultRetryMax shape the retries of a
	// delivery that failed: 1 s, doubling, up to 5 min.
	DefaultRetryBase = time.Second
	DefaultRetryMax  = 5 * time.Minute
	// DefaultAttempts is how many times a delivery is tried before it
	// is given up (about 10 minutes with the defaults).
	DefaultAttempts = 8
	// DefaultRateBurst and DefaultRateEvery are the rate limit of events
	// per Source: 10 at once, then one every 6 s (10 a minute).
	DefaultRateBurst = 10
	DefaultRateEvery = 6 * time.Second
	// DefaultQueueSize bounds the deliveries waiting per Alert; past it
	// new ones are dropped.
	DefaultQueueSize = 1000
)

// Options configure a Dispatcher; the zero value takes the defaults.
type Options struct {
	Clock  clock.WithTicker
	Logger *slog.Logger
	// Client sends the requests; one with DefaultTimeout when nil.
	Client    *http.Client
	RetryBase time.Duration
	RetryMax  time.Duration
	Attempts  int
	RateBurst int
	RateEvery time.Duration
	QueueSize int
}

// Dispatcher sends events to the Alerts that select them. Publish never
// waits: each Alert has a queue and a worker of its own, so a receiver
// that is slow or down holds back only its own deliveries, retried with
// back-off on the injected clock.
type Dispatcher struct {
	store *store.Store
	opts  Options

	mu       sync.Mutex
	ctx      context.Context
	wg       sync.WaitGroup
	lanes    map[string]*lane
	limiters map[string]*rate.Limiter
	next     uint64
}

// lane is the queue of one Alert's deliveries and its worker.
type lane struct {
	alert   string
	queue   *reconcile.Queue
	mu      sync.Mutex
	pending map[string]Event
	started bool
}

// New makes a Dispatcher reading Alerts and Secrets from st.
func New(st *store.Store, opts Options) *Dispatcher {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: DefaultTimeout}
	}
	opts.RetryBase = cmp.Or(opts.RetryBase, DefaultRetryBase)
	opts.RetryMax = cmp.Or(opts.RetryMax, DefaultRetryMax)
	opts.Attempts = cmp.Or(opts.Attempts, DefaultAttempts)
	opts.RateBurst = cmp.Or(opts.RateBurst, DefaultRateBurst)
	opts.RateEvery = cmp.Or(opts.RateEvery, DefaultRateEvery)
	opts.QueueSize = cmp.Or(opts.QueueSize, DefaultQueueSize)
	return &Dispatcher{store: st, opts: opts, lanes: map[string]*lane{}, limiters: map[string]*rate.Limiter{}}
}

var (
	alertKind  = api.KindOf(&api.Alert{})
	secretKind = api.KindOf(&api.Secret{})
)

// Publish queues ev for every Alert that selects it and returns at once.
// An event over its Source's rate limit is dropped, and logged. A nil
// Dispatcher publishes nothing.
func (d *Dispatcher) Publish(ev Event) {
	if d == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = d.opts.Clock.Now()
	}
	objs, _, err := d.store.List(alertKind, store.Filter{})
	if err != nil {
		d.opts.Logger.Warn("alerts: list", "err", err)
		return
	}
	var alerts []*api.Alert
	for _, o := range objs {
		if a := o.(*api.Alert); Matches(a, ev) {
			alerts = append(alerts, a)
		}
	}
	if len(alerts) == 0 {
		return
	}
	d.mu.Lock()
	lim := d.limiters[ev.Source]
	if lim == nil {
		lim = rate.NewLimiter(rate.Every(d.opts.RateEvery), d.opts.RateBurst)
		d.limiters[ev.Source] = lim
	}
	ok := lim.AllowN(d.opts.Clock.Now(), 1)
	d.mu.Unlock()
	if !ok {
		d.opts.Logger.Warn("alerts: event dropped: over its source's rate limit", "source", ev.Source, "type", ev.Type,
			"revision", ev.Revision, "limit", fmt.Sprintf("%d, then one every %s", d.opts.RateBurst, d.opts.RateEvery))
		return
	}
	for _, a := range alerts {
		d.enqueue(a.Name, ev)
	}
}

// enqueue adds a delivery of ev to the lane of an Alert, starting the
// lane's worker when the dispatcher runs.
func (d *Dispatcher) enqueue(alert string, ev Event) {
	d.mu.Lock()
	l := d.lanes[alert]
	if l == nil {
		l = &lane{alert: alert, pending: map[string]Event{},
			queue: reconcile.NewQueue(d.opts.Clock, reconcile.Backoff{Base: d.opts.RetryBase, Max: d.opts.RetryMax})}
		d.lanes[alert] = l
	}
	d.next++
	id := strconv.FormatUint(d.next, 10)
	d.startLocked(l)
	d.mu.Unlock()
	l.mu.Lock()
	if len(l.pending) >= d.opts.QueueSize {
		l.mu.Unlock()
		d.opts.Logger.Warn("alerts: event dropped: the alert's queue is full", "alert", alert, "source", ev.Source, "type", ev.Type)
		return
	}
	l.pending[id] = ev
	l.mu.Unlock()
	l.queue.Add(id)
}

// startLocked starts the worker of l once Run has begun.
func (d *Dispatcher) startLocked(l *lane) {
	if d.ctx == nil || l.started {
		return
	}
	l.started = true
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.work(d.ctx, l)
	}()
}

// Run starts the workers and stops them, waiting for them, when ctx
// ends, dropping what they had not sent. It may run again after.
func (d *Dispatcher) Run(ctx context.Context) {
	d.mu.Lock()
	d.ctx = ctx
	for _, l := range d.lanes {
		d.startLocked(l)
	}
	d.mu.Unlock()
	<-ctx.Done()
	d.mu.Lock()
	for _, l := range d.lanes {
		l.queue.ShutDown()
	}
	d.mu.Unlock()
	d.wg.Wait()
	// What was queued is the next leader's to send: a control plane
	// that leads again starts with lanes of its own.
	d.mu.Lock()
	d.ctx = nil
	d.lanes = map[string]*lane{}
	d.mu.Unlock()
}

// work delivers the events of one Alert, one at a time: a failure that
// may pass (the receiver down, 5xx, 429) is tried again after its
// back-off, up to Attempts times; one that will not (another 4xx, a
// missing Secret) is given up at once.
func (d *Dispatcher) work(ctx context.Context, l *lane) {
	for {
		id, shutdown := l.queue.Get(ctx)
		if shutdown {
			return
		}
		l.mu.Lock()
		ev, ok := l.pending[id]
		l.mu.Unlock()
		if !ok {
			l.queue.Done(id)
			continue
		}
		err := d.deliver(ctx, l.alert, ev)
		attempt := l.queue.NumRequeues(id) + 1
		var perm *permanent
		switch {
		case err == nil, errors.Is(err, errSkip), errors.Is(err, errGone):
			d.finish(l, id)
			if err == nil {
				d.record(ctx, l.alert, nil)
			}
		case ctx.Err() != nil:
			l.queue.Done(id)
			return
		case errors.As(err, &perm), attempt >= d.opts.Attempts:
			d.opts.Logger.Warn("alerts: event given up", "alert", l.alert, "source", ev.Source, "type", ev.Type,
				"attempts", attempt, "err", err)
			d.finish(l, id)
			d.record(ctx, l.alert, err)
		default:
			d.opts.Logger.Info("alerts: delivery failed; retrying", "alert", l.alert, "source", ev.Source,
				"type", ev.Type, "attempt", attempt, "err", err)
			d.record(ctx, l.alert, retrying{err})
			l.queue.AddRateLimited(id)
			l.queue.Done(id)
		}
	}
}

func (d *Dispatcher) finish(l *lane, id string) {
	l.mu.Lock()
	delete(l.pending, id)
	l.mu.Unlock()
	l.queue.Forget(id)
	l.queue.Done(id)
}

// errGone: the Alert was deleted or suspended since the event was queued.
var errGone = errors.New("alert gone")

// permanent is a failure another try will not mend.
type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// retrying is a failure that will be tried again: recorded, not counted.
type retrying struct{ error }

// deliver sends one event to one Alert's receiver, reading the Alert
// and its Secret as they are now.
func (d *Dispatcher) deliver(ctx context.Context, name string, ev Event) error {
	obj, err := d.store.Get(alertKind, "", name)
	if store.IsNotFound(err) {
		return errGone
	}
	if err != nil {
		return err
	}
	a := obj.(*api.Alert)
	if a.Spec.Suspend {
		return errGone
	}
	var secret map[string][]byte
	if ref := a.Spec.Provider.SecretRef; ref != nil {
		ns := cmp.Or(ref.Namespace, api.NamespaceSystem)
		obj, err := d.store.Get(secretKind, ns, ref.Name)
		if err != nil {
			return fmt.Errorf("Secret %s/%s (spec.provider.secretRef): %w", ns, ref.Name, err)
		}
		secret = obj.(*api.Secret).Data
	}
	req, err := request(a, secret, ev)
	if errors.Is(err, errSkip) {
		return err
	}
	if err != nil {
		return &permanent{fmt.Errorf("%s provider: %w", a.Spec.Provider.Type, err)}
	}
	resp, err := d.opts.Client.Do(req.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("%s provider: %w", a.Spec.Provider.Type, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	err = fmt.Errorf("%s provider: %s %s: %s: %s", a.Spec.Provider.Type, req.Method, redact(req), resp.Status, body)
	if resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout {
		return &permanent{err}
	}
	return err
}

// redact is a request's URL without its query (Slack's and some
// webhooks' URLs are secrets in themselves: only the host is named).
func redact(req *http.Request) string {
	u := *req.URL
	u.RawQuery, u.User = "", nil
	if u.Path != "" && req.Header.Get("Authorization") == "" && req.Header.Get("PRIVATE-TOKEN") == "" {
		u.Path = "/…"
	}
	return u.String()
}

// record writes a delivery's outcome to the Alert's status: a success
// counts in status.sent, a failure given up in status.failed; both
// write the time and, for a failure, status.lastError.
func (d *Dispatcher) record(ctx context.Context, name string, err error) {
	now := metav1.NewTime(d.opts.Clock.Now())
	for range 5 {
		obj, gerr := d.store.Get(alertKind, "", name)
		if gerr != nil {
			return
		}
		a := obj.(*api.Alert).DeepCopy()
		var retry retrying
		switch {
		case err == nil:
			a.Status.Sent++
			a.Status.LastSentTime, a.Status.LastError, a.Status.LastErrorTime = &now, "", nil
		case errors.As(err, &retry):
			a.Status.LastError, a.Status.LastErrorTime = retry.error.Error()+" (retrying)", &now
		default:
			a.Status.Failed++
			a.Status.LastError, a.Status.LastErrorTime = err.Error(), &now
		}
		if len(a.Status.LastError) > 1024 {
			a.Status.LastError = a.Status.LastError[:1024]
		}
		_, uerr := d.store.Update(ctx, a)
		if uerr == nil || !store.IsConflict(uerr) {
			return
		}
	}
}
