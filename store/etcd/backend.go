package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Options say where etcd is and how the backend uses it. Zero fields take
// the defaults given.
type Options struct {
	// Endpoints are etcd's client URLs (http://host:2379, or https://
	// with TLS).
	Endpoints []string
	// TLS secures the connection: the CA to trust and a client
	// certificate; nil dials in the clear.
	TLS *tls.Config
	// Prefix is the key prefix of everything the backend keeps (default
	// "/berth"): two clusters may share an etcd under two prefixes.
	Prefix string
	// LeaseTTL is how long a leader's election lease outlives its last
	// renewal (default 4s): how soon another control plane takes over
	// from one that died, so that its writes resume within 5s. The
	// lease is renewed every third of it. etcd counts it in whole
	// seconds.
	LeaseTTL time.Duration
	// RenewDeadline is how long the leader keeps trying a write that
	// etcd does not answer before it gives up its leadership (default
	// two thirds of LeaseTTL, as kube's leader election trades 10s of
	// 15s); it is under LeaseTTL. It bounds nothing else: a read etcd
	// does not answer is given requestTimeout.
	RenewDeadline time.Duration
	// RetryPeriod is the longest wait between a candidate's campaigns,
	// and between a follower's tries to watch the log or the leader
	// again after etcd failed them (default 1s; each starts at 100ms and
	// doubles up to it).
	RetryPeriod time.Duration
	// CheckpointCommits and CheckpointBytes say when the leader folds the
	// log into the checkpoint: after that many commits (default 1,000) or
	// bytes of log (default 32 MiB).
	CheckpointCommits int
	CheckpointBytes   int64
	// CompactionInterval is how often the leader compacts etcd's history,
	// to the revision it saw one interval before, as kube-apiserver does
	// (default 5m; negative: never, for an etcd compacted by its own
	// --auto-compaction-retention).
	CompactionInterval time.Duration
	// DialTimeout bounds reaching etcd at Open (default 5s).
	DialTimeout time.Duration
	// Clock paces retries, checkpoints and compactions.
	Clock  clock.WithTicker
	Logger *slog.Logger

	// keepAlive is how long a connection to etcd may pass nothing
	// before it is pinged (default 30s, as kube-apiserver's), and is
	// dropped when no answer comes within a third of that: a test
	// shortens it.
	keepAlive time.Duration
	// dialOptions are added to the etcd client's: a test loses answers.
	dialOptions []grpc.DialOption
}

func (o *Options) defaults() error {
	if len(o.Endpoints) == 0 {
		return errors.New("etcd: no endpoints")
	}
	if o.Prefix == "" {
		o.Prefix = "/berth"
	}
	if !strings.HasPrefix(o.Prefix, "/") || strings.HasSuffix(o.Prefix, "/") {
		return fmt.Errorf("etcd: prefix %q must start with / and not end with one", o.Prefix)
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.LeaseTTL < 2*time.Second {
		return fmt.Errorf("etcd: lease TTL %s is under etcd's least, 2s", o.LeaseTTL)
	}
	if o.RenewDeadline <= 0 {
		o.RenewDeadline = o.LeaseTTL * 2 / 3
	}
	if o.RenewDeadline >= o.LeaseTTL {
		return fmt.Errorf("etcd: renew deadline %s must be under the lease TTL %s", o.RenewDeadline, o.LeaseTTL)
	}
	if o.RetryPeriod <= 0 {
		o.RetryPeriod = DefaultRetryPeriod
	}
	if o.CheckpointCommits <= 0 {
		o.CheckpointCommits = 1000
	}
	if o.CheckpointBytes <= 0 {
		o.CheckpointBytes = 32 << 20
	}
	if o.CompactionInterval == 0 {
		o.CompactionInterval = 5 * time.Minute
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.keepAlive <= 0 {
		o.keepAlive = 30 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// requestTimeout bounds one request to etcd.
const requestTimeout = 10 * time.Second

// Defaults of the election's timing (see Options).
const (
	DefaultLeaseTTL    = 4 * time.Second
	DefaultRetryPeriod = time.Second
)

// Backend keeps a store in etcd (see the package doc), shared by every
// control plane of a cluster.
type Backend struct {
	opts   Options
	cli    *clientv3.Client
	prefix string
	log    *slog.Logger

	// What the follower has read: the etcd revision to watch the log
	// from, the newest commit delivered, and the parts of a commit not
	// yet whole. Load and Follow run on the store's one follower
	// goroutine; mu guards them for Campaign's reads.
	mu        sync.Mutex
	watchFrom int64
	applied   uint64
	asm       *assembler

	// lead is this control plane's leadership, nil when it has none.
	lead atomic.Pointer[leadership]
	// never is Lost before the first leadership is won: it never closes.
	never chan struct{}

	// The log's growth since the last checkpoint; kick wakes the
	// checkpointer.
	logCommits atomic.Int64
	logBytes   atomic.Int64
	kick       chan struct{}

	// beforeWatch, when set, runs before each watch of the log starts: a
	// test holds the follower there. beforeLoad, when set, runs before
	// each Load, which fails with its error. elected, when set, runs once
	// etcd has elected a campaign, before Campaign hears of it.
	beforeWatch func()
	beforeLoad  func() error
	elected     func()

	// stop ends the leader's background work, and wg waits for it;
	// won is the leadership Campaign won, which Close gives up.
	stopMu sync.Mutex
	stop   context.CancelFunc
	won    *leadership
	wg     sync.WaitGroup

	// campaigns are the elections under way, each in a goroutine that
	// ends once it is won or given up. One given up resigns with the
	// client's context, which only closing the client ends: Close waits
	// for them a while, then closes the client and waits for the rest.
	campaigns sync.WaitGroup
}

var (
	_ store.Replicated = (*Backend)(nil)
	_ store.Persistent = (*Backend)(nil)
)

// Open connects to etcd, checks that it answers, and writes the layout
// version under the prefix if nothing is there yet; a prefix that holds
// another layout is refused.
func Open(ctx context.Context, opts Options) (*Backend, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   opts.Endpoints,
		TLS:         opts.TLS,
		DialTimeout: opts.DialTimeout,
		// A connection that hangs rather than fails (a peer that
		// stopped, a network that drops what it carries) would
		// otherwise hold the log's watch, and the follower would
		// serve what it had for as long as the connection lasts.
		DialKeepAliveTime:    opts.keepAlive,
		DialKeepAliveTimeout: opts.keepAlive / 3,
		Logger:               zap.NewNop(),
		Context:              context.WithoutCancel(ctx),
		DialOptions:          opts.dialOptions,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", strings.Join(opts.Endpoints, ","), err)
	}
	b := &Backend{
		opts:   opts,
		cli:    cli,
		prefix: opts.Prefix,
		log:    opts.Logger,
		asm:    newAssembler(opts.Prefix),
		never:  make(chan struct{}),
		kick:   make(chan struct{}, 1),
	}
	if err := b.checkFormat(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	return b, nil
}

func (b *Backend) checkFormat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, b.opts.DialTimeout)
	defer cancel()
	key := b.prefix + formatKey
	resp, err := b.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, format)).
		Else(clientv3.OpGet(key)).
		Commit()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("etcd %s: no answer within %s: is it running, and reachable from here? (%w)", strings.Join(b.opts.Endpoints, ","), b.opts.DialTimeout, err)
	}
	if err != nil {
		return fmt.Errorf("etcd %s: %w", strings.Join(b.opts.Endpoints, ","), err)
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 1 && string(kvs[0].Value) == format {
		return nil
	}
	got := ""
	if len(kvs) == 1 {
		got = string(kvs[0].Value)
	}
	return fmt.Errorf("etcd %s: %s holds store format %q, this berth reads format %s", strings.Join(b.opts.Endpoints, ","), key, got, format)
}

// Client is the backend's etcd client, for what the control planes share
// beside the store (BootstrapKey).
func (b *Backend) Client() *clientv3.Client { return b.cli }

// Prefix is the key prefix the backend keeps everything under.
func (b *Backend) Prefix() string { return b.prefix }

// Persistent tells the store to encode objects for this backend.
func (b *Backend) Persistent() bool { return true }

// MaxObjectBytes is the largest encoded object a commit may hold.
func (b *Backend) MaxObjectBytes() int { return MaxObjectBytes }

// Load reads the checkpoint and the log after it at one etcd revision,
// calls fn for every object as of the newest whole commit, and returns
// that commit's revision. Follow goes on from there.
func (b *Backend) Load(fn func(api.Object) error) (uint64, error) {
	if b.beforeLoad != nil {
		if err := b.beforeLoad(); err != nil {
			return 0, err
		}
	}
	ctx := context.Background()
	cp, at, err := b.checkpoint(ctx, 0)
	if err != nil {
		return 0, err
	}
	objects := map[string]map[string][]byte{}
	err = b.rangeAt(ctx, b.prefix+objectsDir, at, func(kv *mvccpb.KeyValue) error {
		resource, name, err := parseObjectKey(b.prefix, string(kv.Key))
		if err != nil {
			return err
		}
		m := objects[resource]
		if m == nil {
			m = map[string][]byte{}
			objects[resource] = m
		}
		m[name] = kv.Value
		return nil
	})
	if err != nil {
		return 0, err
	}
	log, err := b.readLog(ctx, cp, at, objects)
	if err != nil {
		return 0, err
	}
	for _, resource := range slices.Sorted(maps.Keys(objects)) {
		k := kinds[resource]
		if k == nil && !customResource(resource) {
			return 0, fmt.Errorf("etcd: %s%s%s: unknown resource", b.prefix, objectsDir, resource)
		}
		for name, data := range objects[resource] {
			if data == nil {
				continue
			}
			obj, err := decodeObject(k, data)
			if err != nil {
				return 0, fmt.Errorf("etcd: %s %s: %w", resource, name, err)
			}
			if err := fn(obj); err != nil {
				return 0, err
			}
		}
	}
	b.mu.Lock()
	b.watchFrom, b.applied, b.asm = at+1, log.last, log.asm
	b.mu.Unlock()
	return log.last, nil
}

// logRead is what readLog found in the log after a checkpoint.
type logRead struct {
	// last is the newest whole commit's revision (the checkpoint's when
	// none follows it); commits and bytes measure the log after the
	// checkpoint; asm holds the parts of a commit not yet whole.
	last           uint64
	commits, bytes int64
	asm            *assembler
}

// readLog reads the log as of etcd revision at and folds each whole
// commit after checkpoint cp into objects, when it is not nil. A commit
// at or before cp is in the checkpoint already, its log not yet deleted.
func (b *Backend) readLog(ctx context.Context, cp uint64, at int64, objects map[string]map[string][]byte) (logRead, error) {
	r := logRead{last: cp, asm: newAssembler(b.prefix)}
	err := b.rangeAt(ctx, b.prefix+logDir, at, func(kv *mvccpb.KeyValue) error {
		rev, parts, err := r.asm.add(string(kv.Key), kv.Value)
		if err != nil {
			return err
		}
		if rev > cp {
			r.bytes += int64(len(kv.Value))
		}
		if parts == nil || rev <= cp {
			return nil
		}
		if objects != nil {
			fold(objects, parts)
		}
		r.last = rev
		r.commits++
		return nil
	})
	return r, err
}

// checkpoint reads the checkpoint's revision at etcd revision at (0: the
// newest) and returns it with the etcd revision read at.
func (b *Backend) checkpoint(ctx context.Context, at int64) (uint64, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var opts []clientv3.OpOption
	if at > 0 {
		opts = append(opts, clientv3.WithRev(at))
	}
	resp, err := b.cli.Get(ctx, b.prefix+checkpointKey, opts...)
	if err != nil {
		return 0, 0, fmt.Errorf("etcd: read %s%s: %w", b.prefix, checkpointKey, err)
	}
	var cp uint64
	if len(resp.Kvs) == 1 {
		if cp, err = strconv.ParseUint(string(resp.Kvs[0].Value), 10, 64); err != nil {
			return 0, 0, fmt.Errorf("etcd: %s%s: %w", b.prefix, checkpointKey, err)
		}
	}
	return cp, resp.Header.Revision, nil
}

// rangePage is how many keys one read of a range returns.
const rangePage = 500

// rangeAt calls fn for every key under prefix dir as of etcd revision
// at, in key order, a page at a time.
func (b *Backend) rangeAt(ctx context.Context, dir string, at int64, fn func(*mvccpb.KeyValue) error) error {
	end := clientv3.GetPrefixRangeEnd(dir)
	key := dir
	for {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		resp, err := b.cli.Get(rctx, key, clientv3.WithRange(end), clientv3.WithRev(at), clientv3.WithLimit(rangePage))
		cancel()
		if err != nil {
			return fmt.Errorf("etcd: read %s: %w", dir, err)
		}
		for _, kv := range resp.Kvs {
			if err := fn(kv); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// Follow watches the log from where Load or the last Follow left off and
// applies each commit once its last part is in. A watch that etcd ends
// (its leader changed, say) is started again from the same place; one
// whose history etcd compacted is store.ErrResync.
func (b *Backend) Follow(ctx context.Context, apply func(uint64, []store.Op) error) error {
	retry := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := b.followOnce(ctx, apply, func() { retry = 100 * time.Millisecond })
		if err == nil || ctx.Err() != nil {
			continue
		}
		if errors.Is(err, store.ErrResync) || !isTransient(err) {
			return err
		}
		b.log.Warn("store: following the etcd log again", "err", err, "after", retry)
		select {
		case <-ctx.Done():
		case <-b.opts.Clock.After(retry):
		}
		retry = min(2*retry, b.opts.RetryPeriod)
	}
	return nil
}

// errWatchEnded is a watch etcd closed without an error.
var errWatchEnded = errors.New("etcd: the watch of the log ended")

func (b *Backend) followOnce(ctx context.Context, apply func(uint64, []store.Op) error, progressed func()) error {
	if b.beforeWatch != nil {
		b.beforeWatch()
	}
	b.mu.Lock()
	from := b.watchFrom
	b.mu.Unlock()
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range b.cli.Watch(wctx, b.prefix+logDir, clientv3.WithPrefix(), clientv3.WithRev(from)) {
		if wr.CompactRevision != 0 {
			return fmt.Errorf("%w (etcd compacted its history to revision %d)", store.ErrResync, wr.CompactRevision)
		}
		if err := wr.Err(); err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				return fmt.Errorf("%w (%v)", store.ErrResync, err)
			}
			return err
		}
		progressed()
		for _, ev := range wr.Events {
			if err := b.take(ev, apply); err != nil {
				return err
			}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return errWatchEnded
}

// take handles one event of the log's watch.
func (b *Backend) take(ev *clientv3.Event, apply func(uint64, []store.Op) error) error {
	key := string(ev.Kv.Key)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.watchFrom = ev.Kv.ModRevision + 1
	if ev.Type == mvccpb.DELETE {
		// A checkpoint folded a commit, or a new leader removed the
		// parts of one its predecessor never finished.
		b.asm.drop(key)
		return nil
	}
	rev, parts, err := b.asm.add(key, ev.Kv.Value)
	if err != nil || parts == nil || rev <= b.applied {
		return err
	}
	ops, err := decodeOps(parts)
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	if err := apply(rev, ops); err != nil {
		return err
	}
	b.applied = rev
	return nil
}

// isTransient tells errors worth a retry: etcd unreachable or between
// leaders, a watch it ended.
func isTransient(err error) bool {
	switch {
	case errors.Is(err, errWatchEnded), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, rpctypes.ErrNoLeader), errors.Is(err, rpctypes.ErrLeaderChanged),
		errors.Is(err, rpctypes.ErrTimeout), errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail),
		errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost), errors.Is(err, rpctypes.ErrUnhealthy):
		return true
	}
	// gRPC's Unavailable, as the client reports a connection it lost:
	// by its code, never by words in the message, which may quote what
	// etcd holds (a commit naming a "connection-pool" that cannot be
	// read is no connection that failed).
	return status.Code(err) == codes.Unavailable
}

// Commit appends a commit to the log, a part at a time, each written only
// while this control plane still holds the election. A part that etcd
// does not answer is tried again until the renew deadline, or the lease
// is lost; then leadership is given up.
func (b *Backend) Commit(rev uint64, ops []store.Op) error {
	l := b.lead.Load()
	if l == nil {
		return store.ErrNotLeader
	}
	parts, err := encodeParts(rev, ops)
	if err != nil {
		return err
	}
	size := 0
	for i, p := range parts {
		if err := b.put(l, logKey(b.prefix, rev, i), p); err != nil {
			b.loseLeadership(l, err)
			return err
		}
		size += len(p)
	}
	commits, bytes := b.logCommits.Add(1), b.logBytes.Add(int64(size))
	if commits >= int64(b.opts.CheckpointCommits) || bytes >= b.opts.CheckpointBytes {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// errElectionRefused is a write etcd refused because another control
// plane holds the election now.
var errElectionRefused = errors.New("etcd: leadership lost, another control plane holds the election")

// errLeadershipLost is errElectionRefused when none of the write was
// written, so it is store.ErrNotLeader, which the API answers with a 503
// to try again (the next leader takes it).
var errLeadershipLost = fmt.Errorf("%w: %w", errElectionRefused, store.ErrNotLeader)

// put writes one key while l holds the election, retrying what etcd did
// not answer until the lease could have expired.
func (b *Backend) put(l *leadership, key string, value []byte) error {
	return b.fenced(l, clientv3.OpPut(key, string(value)))
}

// fenced runs ops in one transaction that holds only while l is still
// the leader, retrying as put does.
func (b *Backend) fenced(l *leadership, ops ...clientv3.Op) error {
	deadline := b.opts.Clock.Now().Add(b.opts.RenewDeadline)
	retry := 50 * time.Millisecond
	var unanswered error
	for {
		// One try waits no longer than the renew deadline; the fence,
		// not the client's idea of the lease, decides whether it is
		// still this leader's.
		ctx, cancel := context.WithTimeout(context.Background(), min(requestTimeout, b.opts.RenewDeadline))
		resp, err := b.cli.Txn(ctx).If(l.fence).Then(ops...).Commit()
		cancel()
		if err == nil {
			switch {
			case resp.Succeeded:
				return nil
			case unanswered != nil:
				// Not errLeadershipLost: etcd may have taken the try
				// it did not answer before the election passed.
				return fmt.Errorf("%w, after a try etcd did not answer and may have taken: %v", errElectionRefused, unanswered)
			}
			return errLeadershipLost
		}
		select {
		case <-l.session.Done():
			// Not errLeadershipLost: etcd may have taken a try that
			// it did not answer.
			return fmt.Errorf("etcd: leadership lost, the election lease expired before etcd answered: %v", err)
		default:
		}
		if !isTransient(err) {
			return fmt.Errorf("etcd: %w", err)
		}
		unanswered = err
		if !b.opts.Clock.Now().Before(deadline) {
			return fmt.Errorf("etcd: no answer within the renew deadline, %s: %w", b.opts.RenewDeadline, err)
		}
		<-b.opts.Clock.After(retry)
		retry = min(2*retry, time.Second)
	}
}

// Lost is closed once the leadership this control plane won last is
// lost: its lease expired, a commit could not be written, or another
// holds the election. Before any is won it never closes; once one is
// lost, Campaign may win another, with a Lost of its own.
func (b *Backend) Lost() <-chan struct{} {
	b.stopMu.Lock()
	defer b.stopMu.Unlock()
	if b.won == nil {
		return b.never
	}
	return b.won.lost
}

// loseLeadership ends l, once: its commits fail from then on, and its
// Lost is closed.
func (b *Backend) loseLeadership(l *leadership, err error) {
	l.lostOnce.Do(func() {
		b.lead.CompareAndSwap(l, nil)
		b.log.Error("store: leadership lost", "err", err)
		close(l.lost)
	})
}

// Resign gives up a leadership won, at once: another control plane is
// elected without waiting for the lease to run out, and this one's
// commits fail from then on (store.ErrNotLeader). A server that stops
// resigns first, then stops, so that writes move on while it drains.
func (b *Backend) Resign() {
	b.stopMu.Lock()
	won := b.won
	b.stopMu.Unlock()
	if won == nil {
		return
	}
	b.lead.Store(nil)
	b.resign(won)
	b.log.Info("store: resigned the lead")
}

// Close ends the backend: a leader resigns, so that another control plane
// takes over at once rather than when the lease runs out.
func (b *Backend) Close() error {
	b.stopMu.Lock()
	stop, won := b.stop, b.won
	b.stop = nil
	b.stopMu.Unlock()
	if stop != nil {
		stop()
	}
	b.wg.Wait()
	b.lead.Store(nil)
	if won != nil {
		b.resign(won)
	}
	// A campaign given up resigns, so that its key does not hold back
	// the next election until its lease runs out; closing the client
	// ends one that etcd does not answer.
	resigned := make(chan struct{})
	go func() {
		b.campaigns.Wait()
		close(resigned)
	}()
	select {
	case <-resigned:
	case <-b.opts.Clock.After(requestTimeout):
	}
	err := b.cli.Close()
	<-resigned
	return err
}
