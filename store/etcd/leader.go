package etcd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// leadership is an election won: every write of the leader is fenced on
// its election key still being the one it created.
type leadership struct {
	session  *concurrency.Session
	election *concurrency.Election
	fence    clientv3.Cmp
	resigned sync.Once
	// lost is closed once the leadership is lost (see Backend.Lost).
	lost     chan struct{}
	lostOnce sync.Once
}

// Campaign blocks until this control plane is elected, announcing value,
// then settles the log (the parts of a commit the last leader left
// unfinished are removed, since nobody acknowledged it) and returns the
// revision of the last whole commit. From then on the backend commits,
// checkpoints and compacts etcd, until leadership is lost or Close.
func (b *Backend) Campaign(ctx context.Context, value string) (uint64, error) {
	if b.lead.Load() != nil {
		return 0, errors.New("etcd: already the leader")
	}
	// A leadership lost before: its background work ends before
	// another may begin.
	b.stopMu.Lock()
	stop := b.stop
	b.stop = nil
	b.stopMu.Unlock()
	if stop != nil {
		stop()
	}
	b.wg.Wait()
	var l *leadership
	retry := 100 * time.Millisecond
	for l == nil {
		var err error
		if l, err = b.elect(ctx, value); err != nil {
			return 0, err
		}
		if l != nil {
			break
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("etcd: campaign: %w", ctx.Err())
		case <-b.opts.Clock.After(retry):
		}
		retry = min(2*retry, b.opts.RetryPeriod)
	}
	session, e := l.session, l.election
	tail, err := b.settle(ctx, l)
	if err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		_ = e.Resign(rctx)
		cancel()
		session.Close()
		return 0, err
	}
	b.lead.Store(l)
	bg, stop := context.WithCancel(context.Background())
	b.stopMu.Lock()
	b.stop, b.won = stop, l
	b.stopMu.Unlock()
	b.wg.Go(func() {
		select {
		case <-session.Done():
			b.loseLeadership(l, errors.New("etcd: the election lease expired"))
		case <-l.lost:
			// A commit or checkpoint etcd refused while the lease
			// may still hold: another control plane need not wait
			// for it to run out.
			b.resign(l)
		case <-bg.Done():
		}
	})
	b.wg.Go(func() { b.checkpointLoop(bg, l) })
	if b.opts.CompactionInterval > 0 {
		b.wg.Go(func() { b.compactLoop(bg) })
	}
	b.log.Info("store: elected leader", "revision", tail)
	return tail, nil
}

// resign gives up an election won, once: revoking its lease deletes the
// election key, so that another control plane is elected at once.
func (b *Backend) resign(l *leadership) {
	l.resigned.Do(func() {
		l.session.Orphan()
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		if _, err := b.cli.Revoke(ctx, l.session.Lease()); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			b.log.Warn("store: resign the election", "err", err)
		}
	})
}

// elect campaigns under a new election lease until elected. It returns
// no leadership and no error when that lease expired before the election
// was won, or etcd failed the campaign for a moment (etcd out of reach
// for longer than the lease, say): the caller campaigns again under a new
// lease. A campaign left to go on under an expired lease would either
// wait for ever, no longer a candidate, or end as if elected once the
// keys before its own were gone, though its own went with its lease.
func (b *Backend) elect(ctx context.Context, value string) (*leadership, error) {
	ttl := int((b.opts.LeaseTTL + time.Second - 1) / time.Second)
	// The lease is asked for under ctx: NewSession would ask under the
	// client's context, which etcd out of reach holds until it answers.
	gctx, cancel := context.WithTimeout(ctx, requestTimeout)
	grant, err := b.cli.Grant(gctx, int64(ttl))
	cancel()
	var session *concurrency.Session
	if err == nil {
		session, err = concurrency.NewSession(b.cli, concurrency.WithTTL(ttl), concurrency.WithLease(grant.ID))
	}
	if err == nil {
		var l *leadership
		if l, err = b.campaignUnder(ctx, session, value); err == nil {
			return l, nil
		}
	}
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("etcd: campaign: %w", ctx.Err())
	case errors.Is(err, errCampaignLeaseExpired) || isTransient(err):
		b.log.Warn("store: campaigning again under a new election lease", "err", err)
		return nil, nil
	}
	return nil, fmt.Errorf("etcd: campaign: %w", err)
}

// errCampaignLeaseExpired is a campaign whose election lease expired
// before it was won.
var errCampaignLeaseExpired = errors.New("etcd: the election lease expired while campaigning")

// campaignUnder campaigns under session until elected, the session's
// lease expires or ctx ends; unless elected, the session is closed. The
// campaign runs in a goroutine of its own, so that ctx ending returns at
// once: a campaign given up resigns with the client's context, which with
// etcd out of reach would hold a shutdown until etcd answers again.
func (b *Backend) campaignUnder(ctx context.Context, session *concurrency.Session, value string) (*leadership, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e := concurrency.NewElection(session, b.prefix+leaderDir)
	result := make(chan error)
	gaveUp := make(chan struct{})
	b.campaigns.Go(func() {
		err := e.Campaign(cctx, value)
		if err != nil {
			select {
			case <-session.Done():
				err = errCampaignLeaseExpired
			default:
			}
			session.Close()
		} else if b.elected != nil {
			b.elected()
		}
		select {
		case result <- err:
		case <-gaveUp:
			if err == nil {
				// Elected as it was given up: its key would lead
				// the election until its lease ran out.
				session.Close()
			}
		}
	})
	var err error
	expired := session.Done()
wait:
	for {
		select {
		case err = <-result:
			break wait
		case <-expired:
			cancel()
			expired = nil
		case <-ctx.Done():
			close(gaveUp)
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	// Campaign ends once the keys before this one are gone, whether or
	// not this one is still there: it is gone when its lease expired.
	l := &leadership{session: session, election: e, fence: clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev()), lost: make(chan struct{})}
	rctx, rcancel := context.WithTimeout(ctx, requestTimeout)
	defer rcancel()
	resp, err := b.cli.Txn(rctx).If(l.fence).Commit()
	if err == nil && !resp.Succeeded {
		err = errCampaignLeaseExpired
	}
	if err != nil {
		session.Close()
		return nil, err
	}
	return l, nil
}

// settle finds the last whole commit of the log and removes what comes
// after it, and counts the log since the checkpoint for the checkpointer.
func (b *Backend) settle(ctx context.Context, l *leadership) (uint64, error) {
	cp, at, err := b.checkpoint(ctx, 0)
	if err != nil {
		return 0, err
	}
	log, err := b.readLog(ctx, cp, at, nil)
	if err != nil {
		return 0, err
	}
	last := log.last
	if len(log.asm.pending) > 0 {
		if err := b.fenced(l, clientv3.OpDelete(logEnd(b.prefix, last), clientv3.WithRange(clientv3.GetPrefixRangeEnd(b.prefix+logDir)))); err != nil {
			return 0, fmt.Errorf("etcd: remove an unfinished commit: %w", err)
		}
		b.log.Info("store: removed the parts of a commit the last leader did not finish", "after", last)
	}
	b.logCommits.Store(log.commits)
	b.logBytes.Store(log.bytes)
	return last, nil
}

// checkpointLoop folds the log into the checkpoint whenever it has grown
// past the options' bounds, and tries again a minute after a failure.
func (b *Backend) checkpointLoop(ctx context.Context, l *leadership) {
	tick := b.opts.Clock.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.kick:
		case <-tick.C():
		}
		if b.logCommits.Load() < int64(b.opts.CheckpointCommits) && b.logBytes.Load() < b.opts.CheckpointBytes {
			continue
		}
		if err := b.Checkpoint(ctx); err != nil && ctx.Err() == nil {
			b.log.Warn("store: checkpoint failed; the log keeps growing until the next", "err", err)
			if errors.Is(err, errElectionRefused) {
				b.loseLeadership(l, err)
				return
			}
		}
	}
}

// txnOps bounds the operations of one etcd transaction, under etcd's
// default --max-txn-ops of 128.
const txnOps = 64

// Checkpoint folds the whole commits of the log into the objects: it
// writes each object a commit changed as it now stands (or deletes it),
// then the checkpoint's new revision, then deletes the log it folded.
// Cut short anywhere, it leaves a store that loads the same: the log it
// has not yet deleted is folded again over the objects. Only the leader
// checkpoints.
func (b *Backend) Checkpoint(ctx context.Context) error {
	l := b.lead.Load()
	if l == nil {
		return errors.New("etcd: only the leader checkpoints")
	}
	cp, at, err := b.checkpoint(ctx, 0)
	if err != nil {
		return err
	}
	objects := map[string]map[string][]byte{}
	log, err := b.readLog(ctx, cp, at, objects)
	if err != nil {
		return err
	}
	last := log.last
	if last == cp {
		return nil
	}
	var (
		ops  []clientv3.Op
		size int
	)
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		err := b.fenced(l, ops...)
		ops, size = ops[:0], 0
		return err
	}
	for _, resource := range slices.Sorted(maps.Keys(objects)) {
		for _, name := range slices.Sorted(maps.Keys(objects[resource])) {
			data := objects[resource][name]
			key := objectKey(b.prefix, resource, name)
			if len(ops) == txnOps || size+len(data) > maxPartBytes {
				if err := flush(); err != nil {
					return err
				}
			}
			if data == nil {
				ops = append(ops, clientv3.OpDelete(key))
			} else {
				ops = append(ops, clientv3.OpPut(key, string(data)))
			}
			size += len(key) + len(data)
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := b.fenced(l, clientv3.OpPut(b.prefix+checkpointKey, strconv.FormatUint(last, 10))); err != nil {
		return err
	}
	if err := b.fenced(l, clientv3.OpDelete(b.prefix+logDir, clientv3.WithRange(logEnd(b.prefix, last)))); err != nil {
		return err
	}
	b.logCommits.Store(0)
	b.logBytes.Store(0)
	b.log.Debug("store: checkpoint", "revision", last)
	return nil
}

// compactLoop compacts etcd's history every interval to the revision
// etcd was at one interval before, as kube-apiserver does: a follower's
// watch keeps an interval of history to catch up on, and etcd does not
// keep every version the log ever wrote.
func (b *Backend) compactLoop(ctx context.Context) {
	tick := b.opts.Clock.NewTicker(b.opts.CompactionInterval)
	defer tick.Stop()
	var prev int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		resp, err := b.cli.Get(rctx, b.prefix+formatKey)
		if err == nil && prev > 0 {
			_, err = b.cli.Compact(rctx, prev)
			if errors.Is(err, rpctypes.ErrCompacted) {
				err = nil // someone compacted further already
			}
		}
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				b.log.Warn("store: compact etcd's history", "err", err)
			}
			continue
		}
		prev = resp.Header.Revision
	}
}

// Leader returns the value the current leader announced (where its API
// serves), and false when no control plane leads.
func (b *Backend) Leader(ctx context.Context) (string, bool, error) {
	v, ok, _, err := b.leader(ctx)
	return v, ok, err
}

// leader is Leader, with the etcd revision it read at.
func (b *Backend) leader(ctx context.Context) (string, bool, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := b.cli.Get(ctx, b.prefix+leaderDir+"/", append(clientv3.WithFirstCreate(), clientv3.WithPrefix())...)
	if err != nil {
		return "", false, 0, fmt.Errorf("etcd: read the leader: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", false, resp.Header.Revision, nil
	}
	return string(resp.Kvs[0].Value), true, resp.Header.Revision, nil
}

// ObserveLeader calls fn with the leader's value each time it may have
// changed ("" while none leads), until ctx ends.
func (b *Backend) ObserveLeader(ctx context.Context, fn func(string)) {
	retry := 100 * time.Millisecond
	for ctx.Err() == nil {
		v, _, at, err := b.leader(ctx)
		if err != nil {
			if ctx.Err() == nil {
				b.log.Warn("store: read the leader", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-b.opts.Clock.After(retry):
			}
			retry = min(2*retry, b.opts.RetryPeriod)
			continue
		}
		retry = 100 * time.Millisecond
		fn(v)
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := b.cli.Watch(wctx, b.prefix+leaderDir+"/", clientv3.WithPrefix(), clientv3.WithRev(at+1))
		for wr := range wch {
			if wr.Err() != nil || len(wr.Events) > 0 {
				break
			}
		}
		cancel()
	}
}

// ReadIndex (store.ReadIndexer) asks etcd, under the renew deadline, how
// far the commits have gone: the revision of the newest commit in the
// log, or of the checkpoint when the log after it is empty. With
// leading, it checks instead that this control plane's election key is
// still the leader's, as every commit does; one that no longer is loses
// its leadership here, without waiting for its next write.
func (b *Backend) ReadIndex(ctx context.Context, leading bool) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.RenewDeadline)
	defer cancel()
	if leading {
		l := b.lead.Load()
		if l == nil {
			return 0, errLeadershipLost
		}
		resp, err := b.cli.Txn(ctx).If(l.fence).Commit()
		if err != nil {
			return 0, fmt.Errorf("etcd: confirm the lead: %w", err)
		}
		if !resp.Succeeded {
			b.loseLeadership(l, errElectionRefused)
			return 0, errLeadershipLost
		}
		return 0, nil
	}
	resp, err := b.cli.Txn(ctx).Then(
		clientv3.OpGet(b.prefix+checkpointKey),
		clientv3.OpGet(b.prefix+logDir, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(1)),
	).Commit()
	if err != nil {
		return 0, fmt.Errorf("etcd: read how far the log goes: %w", err)
	}
	var rev uint64
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) == 1 {
		if rev, err = strconv.ParseUint(string(kvs[0].Value), 10, 64); err != nil {
			return 0, fmt.Errorf("etcd: %s%s: %w", b.prefix, checkpointKey, err)
		}
	}
	if kvs := resp.Responses[1].GetResponseRange().GetKvs(); len(kvs) == 1 {
		last, _, err := parseLogKey(b.prefix, string(kvs[0].Key))
		if err != nil {
			return 0, fmt.Errorf("etcd: %w", err)
		}
		rev = max(rev, last)
	}
	return rev, nil
}
