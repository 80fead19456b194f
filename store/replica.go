package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
)

// startFollowing makes the store a follower over r: it takes no writes,
// and a goroutine it owns applies the leader's commits as r delivers
// them, until Lead or Close.
func (s *Store) startFollowing(r Replicated) {
	s.following = true
	s.followed.Store(true)
	s.replica = r
	s.goFollow(false)
}

// goFollow starts the goroutine that follows the leader's commits, after
// loading the backend again when reload is set. The caller holds writeMu
// or owns the store alone.
func (s *Store) goFollow(reload bool) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.stopFollow, s.followDone = cancel, done
	go func() {
		defer close(done)
		if reload && s.resyncRetrying(ctx) != nil {
			return
		}
		s.follow(ctx)
	}()
}

// StepDown makes a store that led, and whose leadership of its
// replicated backend was lost (Lost is closed), a follower again,
// without a restart: from the call on it takes no writes (ErrNotLeader,
// which the API sends on to the new leader); once the commits under way
// have been answered (they fail, the election refusing them), its tables
// go back to the last durable revision, forgetting what the backend never
// took, and it loads the backend again and follows the new leader's
// commits from there, as a follower that just started. Lead may then
// campaign again.
func (s *Store) StepDown() error {
	if s.replica == nil {
		return errors.New("store: only a store over a replicated backend steps down")
	}
	s.writeMu.Lock()
	if s.closed {
		s.writeMu.Unlock()
		return ErrClosed
	}
	if s.following {
		s.writeMu.Unlock()
		return nil
	}
	s.following = true
	s.followed.Store(true)
	// Every batch before this one is answered before it is.
	b := &batch{rev: s.rev, barrier: true, done: make(chan error, 1)}
	s.commits <- b
	s.writeMu.Unlock()
	<-b.done

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.closed {
		return ErrClosed
	}
	v := s.view.Load()
	if s.rev != v.rev {
		s.opts.Logger.Warn("store: forgetting the commits the backend did not take", "from", v.rev+1, "to", s.rev)
	}
	s.db, s.rev = v.db.Snapshot(), v.rev
	s.failed.Store(nil)
	err := errors.New("stepped down; loading the new leader's state")
	s.behind.Store(&err)
	s.goFollow(true)
	s.opts.Logger.Info("store follows again", "revision", s.rev)
	return nil
}

// follow applies the leader's commits until ctx ends. When the backend
// lost track of them it loads everything again and applies the
// difference, as a Kubernetes reflector relists, and tries the load again
// with back-off while it fails (etcd out of reach, say): meanwhile its
// reads are stale, and Err (the store check of /readyz) says so. Any
// other failure leaves the store as it was, failed for good.
func (s *Store) follow(ctx context.Context) {
	for {
		err := s.replica.Follow(ctx, s.applyCommit)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, ErrResync) {
			s.opts.Logger.Warn("store fell behind the leader's history; loading it again")
			if err = s.resyncRetrying(ctx); err == nil {
				continue
			}
			if ctx.Err() != nil {
				return
			}
		}
		if err == nil {
			err = errors.New("the backend stopped delivering commits")
		}
		err = fmt.Errorf("follow the leader: %w", err)
		s.failed.CompareAndSwap(nil, &err)
		s.opts.Logger.Error("store cannot follow the leader; its reads may be stale", "err", err)
		return
	}
}

// resyncRetrying loads again until a load succeeds or ctx ends, waiting
// 100ms doubling to 30s between tries; while it fails the store is
// behind.
func (s *Store) resyncRetrying(ctx context.Context) error {
	wait := 100 * time.Millisecond
	for {
		err := s.resync()
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrClosed) {
			return err
		}
		err = fmt.Errorf("behind the leader, loading again: %w", err)
		s.behind.Store(&err)
		s.opts.Logger.Warn("store cannot load the leader's state yet; its reads are stale", "err", err, "retry", wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.after(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// after waits on the store's clock when it can, else on the real one.
func (s *Store) after(d time.Duration) <-chan time.Time {
	if c, ok := s.clock.(clock.Clock); ok {
		return c.After(d)
	}
	return time.After(d)
}

// applyCommit applies one of the leader's commits: rev is its newest
// revision, ops its writes in order, each with its transaction's
// revision. Readers and watchers then see it as the leader's did.
func (s *Store) applyCommit(rev uint64, ops []Op) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if !s.following {
		return ErrClosed
	}
	if rev <= s.rev {
		return nil // delivered again after a reconnect
	}
	return s.replay(rev, ops)
}

// replay writes ops into the tables as one memdb transaction, publishes
// the result as revision rev and hands the events to the watchers. The
// caller holds writeMu.
func (s *Store) replay(rev uint64, ops []Op) error {
	txn := s.db.Txn(true)
	events := make([]Event, 0, len(ops))
	for _, op := range ops {
		table := tableName(op.Kind)
		raw, err := txn.First(table, IndexID, idKey(op.Kind, op.Namespace, op.Name))
		if err != nil {
			txn.Abort()
			return fmt.Errorf("apply revision %d: %w", rev, err)
		}
		var old api.Object
		if raw != nil {
			old = raw.(api.Object)
		}
		opRev := op.Revision
		if opRev == 0 || opRev > rev {
			opRev = rev
		}
		if op.Object == nil {
			if old == nil {
				continue
			}
			if err := txn.Delete(table, old); err != nil {
				txn.Abort()
				return fmt.Errorf("apply revision %d: delete %s %s: %w", rev, op.Kind.Resource, objectKey(op.Namespace, op.Name), err)
			}
			// As the leader's event: the last state at the revision of
			// its deletion.
			gone := old.DeepCopyObject().(api.Object)
			gone.SetResourceVersion(strconv.FormatUint(opRev, 10))
			events = append(events, Event{Type: Deleted, Revision: opRev, Kind: op.Kind, Object: gone, Old: old})
			continue
		}
		op.Object.GetObjectKind().SetGroupVersionKind(op.Kind.GVK)
		if err := txn.Insert(table, op.Object); err != nil {
			txn.Abort()
			return fmt.Errorf("apply revision %d: write %s %s: %w", rev, op.Kind.Resource, objectKey(op.Namespace, op.Name), err)
		}
		t := Added
		if old != nil {
			t = Modified
		}
		events = append(events, Event{Type: t, Revision: opRev, Kind: op.Kind, Object: op.Object, Old: old})
	}
	txn.Commit()
	s.touch(ops, rev)
	syncCustomKinds(ops)
	s.rev = rev
	v := &view{db: s.db.Snapshot(), rev: rev}
	s.publish(v)
	s.hub.dispatch([]*batch{{rev: rev, events: events, view: v}})
	return nil
}

// resync loads the backend again and applies what differs from the
// tables as one commit at the loaded revision: watchers see each object
// that changed in between once, in its newest state.
func (s *Store) resync() error {
	type key struct {
		kind            *api.Kind
		namespace, name string
	}
	fresh := map[key]api.Object{}
	var custom []api.Object
	rev, err := s.replica.Load(func(obj api.Object) error {
		if _, ok := obj.(*unstructured.Unstructured); ok {
			custom = append(custom, obj) // its kind once the CRDs are in
			return nil
		}
		k := api.KindOf(obj)
		if k == nil {
			return fmt.Errorf("load: unknown type %T", obj)
		}
		fresh[key{k, obj.GetNamespace(), obj.GetName()}] = obj
		return nil
	})
	if err != nil {
		return fmt.Errorf("load again: %w", err)
	}
	for kk, obj := range fresh {
		if kk.kind == crdKind {
			registerCRD(obj.(*api.CustomResourceDefinition))
		}
	}
	for _, obj := range custom {
		if k := api.KindOf(obj); k != nil {
			fresh[key{k, obj.GetNamespace(), obj.GetName()}] = obj
		}
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if !s.following {
		return ErrClosed
	}
	if rev < s.rev {
		return fmt.Errorf("load again: the backend is at revision %d, behind this store's %d", rev, s.rev)
	}
	var ops []Op
	read := s.db.Txn(false)
	for _, k := range api.AllKinds() {
		it, err := read.Get(tableName(k), IndexID+"_prefix", idKey(k, "", ""))
		if err != nil {
			return fmt.Errorf("load again: %w", err)
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			cur := raw.(api.Object)
			if k.Custom && !strings.HasPrefix(idOf(cur), idKey(k, "", "")) {
				break
			}
			kk := key{k, cur.GetNamespace(), cur.GetName()}
			obj, ok := fresh[kk]
			delete(fresh, kk)
			switch {
			case !ok:
				ops = append(ops, Op{Kind: k, Namespace: kk.namespace, Name: kk.name, Revision: rev})
			case obj.GetResourceVersion() != cur.GetResourceVersion():
				ops = append(ops, Op{Kind: k, Namespace: kk.namespace, Name: kk.name, Object: obj, Revision: rev})
			}
		}
	}
	for kk, obj := range fresh {
		ops = append(ops, Op{Kind: kk.kind, Namespace: kk.namespace, Name: kk.name, Object: obj, Revision: rev})
	}
	// Caught up once this commit is seen: no longer behind.
	s.behind.Store(nil)
	if rev == s.rev && len(ops) == 0 {
		return nil
	}
	return s.replay(rev, ops)
}

// Lead makes the store its replicated backend's leader and then takes
// writes: it campaigns, announcing value (where this control plane's API
// serves, for the followers to send writes to), waits until it has
// applied every commit the backend holds, and stops following. It blocks
// until then or until ctx ends. A store over a backend that is not
// replicated leads from the start, and Lead returns at once.
func (s *Store) Lead(ctx context.Context, value string) error {
	if s.replica == nil {
		return nil
	}
	tail, err := s.replica.Campaign(ctx, value)
	if err != nil {
		return fmt.Errorf("campaign for leader: %w", err)
	}
	// Elected, no other store commits any more: what the backend holds
	// up to tail is all there is, and the follower is catching up on it.
	// The follower's fields are read under writeMu once: StepDown, after
	// this returns, starts another follower in them, while the goroutine
	// below may not even have begun.
	s.writeMu.Lock()
	stop, followDone := s.stopFollow, s.followDone
	s.writeMu.Unlock()
	if stop == nil {
		return ErrClosed
	}
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-followDone:
			cancel()
		case <-waitCtx.Done():
		}
	}()
	if err := s.WaitRevision(waitCtx, tail); err != nil {
		if ferr := s.failure(); ferr != nil {
			return ferr
		}
		return err
	}
	stop()
	<-followDone
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.rev < tail {
		return fmt.Errorf("lead: applied revision %d of the backend's %d", s.rev, tail)
	}
	s.following = false
	s.followed.Store(false)
	// A load again that failed may have left it behind; it holds every
	// commit there is now, and is behind no leader.
	s.behind.Store(nil)
	s.stopFollow = nil
	s.opts.Logger.Info("store leads", "revision", s.rev)
	return nil
}

// Replicated reports whether the store's backend is shared with other
// control planes (Replicated): one leads, the others follow.
func (s *Store) Replicated() bool { return s.replica != nil }

// Following reports whether the store follows another's commits and
// takes no writes of its own.
func (s *Store) Following() bool { return s.followed.Load() }

// Lost is closed once the store's leadership of its replicated backend
// is lost (its writes then fail); nil, never closed, for a backend that
// is not replicated.
func (s *Store) Lost() <-chan struct{} {
	if s.replica == nil {
		return nil
	}
	return s.replica.Lost()
}

// syncWait bounds how long Sync waits for a follower to apply the
// commits the backend holds.
const syncWait = 3 * time.Second

// Sync waits until readers of the store see every write acknowledged
// before it was called, by whichever control plane: a read after it is
// linearizable, as Kubernetes' quorum read from etcd is. A store of its
// own leads for good and returns at once. Over a replicated backend, a
// leader confirms that it still leads (a deposed one that does not know
// it yet would answer from what it held) and a follower waits to have
// applied the newest commit the backend holds. ErrNotLeader or
// ErrNotCurrent say that nothing should be answered from the store yet.
func (s *Store) Sync(ctx context.Context) error {
	ri, ok := s.replica.(ReadIndexer)
	if !ok {
		return nil
	}
	leading := !s.Following()
	rev, err := ri.ReadIndex(ctx, leading)
	if err != nil {
		if errors.Is(err, ErrNotLeader) || ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%w: %w", ErrNotCurrent, err)
	}
	if leading {
		return nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.after(syncWait):
			cancel()
		case <-wctx.Done():
		}
	}()
	if err := s.WaitRevision(wctx, rev); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%w: revision %d not applied within %s (at %d)", ErrNotCurrent, rev, syncWait, s.Revision())
	}
	return nil
}

// confirmLead makes sure a leader still leads before it answers from its
// tables a transaction that wrote nothing (a 409, a 404, a conflict, an
// unchanged object): a deposed leader that does not know it yet would
// answer from what it held, which the new leader may have changed. A
// write needs no such check: its commit is fenced on the election.
func (s *Store) confirmLead(ctx context.Context) error {
	ri, ok := s.replica.(ReadIndexer)
	if !ok {
		return nil
	}
	if _, err := ri.ReadIndex(ctx, true); err != nil {
		if errors.Is(err, ErrNotLeader) {
			return err
		}
		return fmt.Errorf("%w: cannot confirm this control plane still leads: %w", ErrNotCommitted, err)
	}
	return nil
}
