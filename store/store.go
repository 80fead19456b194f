package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-memdb"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
)

// Options tune a Store. The zero value is usable.
type Options struct {
	// Clock stamps creation and deletion times; defaults to the real clock.
	// When it is a clock.Clock, it also times the retries of a backend
	// that failed a write (see Recoverable); otherwise the real clock does.
	Clock clock.PassiveClock
	// History is how many events the change log keeps for watches that
	// start in the past (default 4,096). A watch from an older revision
	// gets ErrGone and lists again. The log keeps alive every version it
	// holds that the store has since replaced, so its length is memory:
	// a few seconds of a busy cluster's changes is what reconnecting
	// watchers need.
	History int
	// WatcherQueue is how many undelivered events a watcher may hold before
	// it is stopped with ErrWatcherTooSlow (default 10,000).
	WatcherQueue int
	// Logger receives the store's few log lines; defaults to slog.Default().
	Logger *slog.Logger
	// Admit are checks every write must pass, run in order inside its
	// transaction (see AdmitFunc); the resource quota is one.
	Admit []AdmitFunc
}

// Store is berth's state: immutable objects in go-memdb tables, written by
// serialised transactions that each get the next revision, made durable by
// a Backend before they are acknowledged or seen.
//
// Objects handed to a write belong to the store from then on, and objects
// read from it are shared: copy them (DeepCopyObject) before changing them.
type Store struct {
	// kindRevs are the revisions of the newest write to each kind.
	kindRevs   kindRevisions
	opts       Options
	clock      clock.PassiveClock
	backend    Backend
	persistent bool
	// maxObject is the backend's largest object, encoded; 0: no bound.
	maxObject int
	db        *memdb.MemDB

	// writeMu serialises write transactions; rev is the revision of the
	// last transaction applied to db, which may not be durable yet.
	writeMu sync.Mutex
	rev     uint64
	closed  bool

	// view is what readers see: a snapshot at the last durable revision.
	view   atomic.Pointer[view]
	failed atomic.Pointer[error]

	commits   chan *batch
	committed chan struct{}
	// failedCh wakes the recovery of a Recoverable backend once a write
	// failed; recoverStop ends it and recoverDone says it has.
	failedCh    chan struct{}
	recoverStop chan struct{}
	recoverDone chan struct{}

	hub *hub

	// uid is the store's identity (see UID).
	uid string

	// advanced is closed, and replaced, each time the view moves on
	// (see WaitRevision).
	advancedMu sync.Mutex
	advanced   chan struct{}

	// replica is the backend when it is Replicated. following is set
	// (under writeMu) while the store follows another's commits, and
	// stopFollow ends that; followDone is closed once it has. followed
	// mirrors following for readers that must not wait on writeMu (the
	// API's forwarding, /readyz), as a write stuck on its backend holds it.
	replica   Replicated
	following bool
	followed  atomic.Bool
	// behind says why a follower that lost track of the leader's commits
	// could not load them again yet; nil once it has, or leads.
	behind     atomic.Pointer[error]
	stopFollow context.CancelFunc
	followDone chan struct{}

	// forked: the store is a Fork, whose writes are seen as they commit.
	forked bool
	// kinds are a fork's own custom kinds (see forkKinds); nil for a real
	// store, whose kinds are the process's.
	kinds *forkKinds
}

type view struct {
	db  *memdb.MemDB
	rev uint64
}

// batch is one committed transaction on its way to the backend.
type batch struct {
	rev    uint64
	ops    []Op
	events []Event
	view   *view
	done   chan error
	// probe asks the backend whether it writes again (Recoverable), in
	// turn with the batches before it; it carries nothing else.
	probe bool
	// barrier waits for the batches before it and carries nothing (see
	// Store.barrier); rev is the newest of them.
	barrier bool
}

// New opens a store over a backend, loading every object it holds.
func New(backend Backend, opts Options) (*Store, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.History <= 0 {
		opts.History = 4096
	}
	if opts.WatcherQueue <= 0 {
		opts.WatcherQueue = 10000
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		return nil, fmt.Errorf("store schema: %w", err)
	}
	// The store's watchers are fed from its change log, never from
	// memdb's watch channels. A snapshot is a MemDB whose writes do not
	// track the channels of the nodes they copy (memdb turns that off for
	// snapshots, whose writes no watcher of the original can see), so
	// writing to one saves a map entry per copied node and closing each
	// of those channels at every commit.
	db = db.Snapshot()
	s := &Store{
		kindRevs:  newKindRevisions(),
		opts:      opts,
		clock:     opts.Clock,
		backend:   backend,
		db:        db,
		commits:   make(chan *batch, 256),
		committed: make(chan struct{}),
		advanced:  make(chan struct{}),
	}
	if p, ok := backend.(Persistent); ok {
		s.persistent = p.Persistent()
	}
	if l, ok := backend.(Limited); ok {
		s.maxObject = l.MaxObjectBytes()
	}
	switch b := backend.(type) {
	case Identified:
		s.uid = b.UID()
	case Replicated:
		// Shared by control planes that come and go: none of them may
		// make one up.
	default:
		s.uid = string(uuid.NewUUID()) // a memory store forgets all at each start
	}

	txn := db.Txn(true)
	n := 0
	rev, err := backend.Load(func(obj api.Object) error {
		if _, ok := obj.(*unstructured.Unstructured); ok {
			// Its CRD may come later: the kinds are registered once all
			// is loaded.
			n++
			return txn.Insert(customTable, obj)
		}
		k := api.KindOf(obj)
		if k == nil {
			return fmt.Errorf("load: unknown type %T", obj)
		}
		obj.GetObjectKind().SetGroupVersionKind(k.GVK)
		n++
		return txn.Insert(tableName(k), obj)
	})
	if err != nil {
		txn.Abort()
		return nil, fmt.Errorf("load store: %w", err)
	}
	txn.Commit()
	if err := registerLoaded(reader{txn: db.Txn(false)}); err != nil {
		return nil, fmt.Errorf("load store: %w", err)
	}
	// As in etcd, an empty store is at revision 1, so that revision 0 is
	// free to mean "now" in a watch.
	s.rev = max(rev, 1)
	rev = s.rev
	s.view.Store(&view{db: db.Snapshot(), rev: rev})
	s.hub = newHub(rev, opts.History, opts.WatcherQueue)
	if n > 0 {
		opts.Logger.Info("store loaded", "objects", n, "revision", rev)
	}
	go s.commitLoop()
	if r, ok := backend.(Replicated); ok {
		s.startFollowing(r)
	}
	if r, ok := backend.(Recoverable); ok {
		c, ok := opts.Clock.(clock.Clock)
		if !ok {
			c = clock.RealClock{}
		}
		s.failedCh = make(chan struct{}, 1)
		s.recoverStop = make(chan struct{})
		s.recoverDone = make(chan struct{})
		go s.recoverLoop(r, c)
	}
	return s, nil
}

// UID is the store's identity: the same across restarts for as long as
// the store holds what it held (a restored snapshot of it too), another
// once it was made anew (an emptied file, a memory store started again).
// An agent that joined a store stops a pod the store no longer holds only
// while the UID is the one it joined. Empty when the backend keeps none
// (etcd).
func (s *Store) UID() string { return s.uid }

// Revision returns the newest revision readers can see.
func (s *Store) Revision() uint64 { return s.view.Load().rev }

// publish makes v what readers see and wakes WaitRevision.
func (s *Store) publish(v *view) {
	s.view.Store(v)
	s.advancedMu.Lock()
	close(s.advanced)
	s.advanced = make(chan struct{})
	s.advancedMu.Unlock()
}

// WaitRevision returns once readers see revision rev or a newer one, or
// with ctx's error. A follower's API waits so for the revision of a write
// the leader made for it, so that its client reads what it wrote.
func (s *Store) WaitRevision(ctx context.Context, rev uint64) error {
	for {
		s.advancedMu.Lock()
		ch := s.advanced
		s.advancedMu.Unlock()
		if s.Revision() >= rev {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Snapshot returns a consistent read-only view of every table at the
// newest durable revision. It is cheap and never blocks writers.
func (s *Store) Snapshot() *Snapshot {
	v := s.view.Load()
	return &Snapshot{reader{txn: v.db.Txn(false), rev: v.rev}}
}

// Get reads one object from a fresh snapshot.
func (s *Store) Get(k *api.Kind, namespace, name string) (api.Object, error) {
	return s.Snapshot().Get(k, namespace, name)
}

// GetForWrite reads an object for a write that reads it before its
// transaction (an update or a delete, to authorize and admit it). An
// object found is read again, and checked, by the write's own
// transaction. NotFound is the write's answer, so it is read as a
// transaction that writes nothing reads (see Txn): from the tables the
// next write would find, once every commit they hold is durable and, on
// a replicated store, once this control plane is confirmed to lead. A
// snapshot alone could answer 404 for an object another control plane
// reads already: a deposed leader's, or one not yet holding its own
// newest commit.
func (s *Store) GetForWrite(ctx context.Context, k *api.Kind, namespace, name string) (api.Object, error) {
	obj, err := s.Get(k, namespace, name)
	if !IsNotFound(err) {
		return obj, err
	}
	_, err = s.DryRun(ctx, func(tx *Txn) error {
		var err error
		obj, err = tx.Get(k, namespace, name)
		return err
	})
	return obj, err
}

// List reads the objects of a kind that match a filter from a fresh
// snapshot, and the revision it was taken at.
func (s *Store) List(k *api.Kind, f Filter) ([]api.Object, uint64, error) {
	snap := s.Snapshot()
	objs, err := snap.List(k, f)
	return objs, snap.Revision(), err
}

// Create stores a new object and returns it as stored.
func (s *Store) Create(ctx context.Context, obj api.Object) (api.Object, error) {
	var out api.Object
	_, err := s.Txn(ctx, func(tx *Txn) error {
		var err error
		out, err = tx.Create(obj)
		return err
	})
	return out, err
}

// Update replaces an object and returns it as stored; see Txn.Update.
func (s *Store) Update(ctx context.Context, obj api.Object) (api.Object, error) {
	var out api.Object
	_, err := s.Txn(ctx, func(tx *Txn) error {
		var err error
		out, err = tx.Update(obj)
		return err
	})
	return out, err
}

// Delete deletes an object, gracefully where it must; see Txn.Delete.
func (s *Store) Delete(ctx context.Context, k *api.Kind, namespace, name string, opts DeleteOptions) (api.Object, error) {
	var out api.Object
	_, err := s.Txn(ctx, func(tx *Txn) error {
		var err error
		out, err = tx.Delete(k, namespace, name, opts)
		return err
	})
	return out, err
}

// Txn runs fn as one transaction: every write it makes commits together
// under one new revision, or none does if fn returns an error. Txn returns
// once the writes are durable, with the revision they got (the current
// revision if fn wrote nothing). If ctx ends while waiting for the disk the
// transaction may still commit.
func (s *Store) Txn(ctx context.Context, fn func(tx *Txn) error) (uint64, error) {
	s.writeMu.Lock()
	if err := s.writable(); err != nil {
		s.writeMu.Unlock()
		return 0, err
	}
	tx := s.begin()
	err := fn(tx)
	if err == nil {
		err = s.encode(tx.ops)
	}
	if err != nil || len(tx.ops) == 0 {
		// The answer (a 409, a 404, a conflict, an object unchanged)
		// rests on what fn read: it waits until that is durable.
		tx.txn.Abort()
		rev := s.rev
		b := s.barrier()
		s.writeMu.Unlock()
		if werr := s.awaitBarrier(ctx, b); werr != nil {
			return rev, werr
		}
		if werr := s.confirmLead(ctx); werr != nil {
			return rev, werr
		}
		if b != nil {
			s.refreshCurrent(err)
		}
		return rev, err
	}
	tx.txn.Commit()
	s.rev = tx.rev
	s.touch(tx.ops, tx.rev)
	// A fork's CRDs are its own: it serves their kinds, the process does
	// not.
	s.syncKinds(tx.ops)
	if s.forked {
		// Nothing to make durable: seen at once, without a trip through
		// the commit loop, which a plan's thousands of writes would wait
		// for one by one.
		b := &batch{rev: tx.rev, events: tx.events}
		s.publish(&view{db: s.db.Snapshot(), rev: tx.rev})
		s.hub.dispatch([]*batch{b})
		s.writeMu.Unlock()
		return tx.rev, nil
	}
	b := &batch{
		rev:    tx.rev,
		ops:    tx.ops,
		events: tx.events,
		view:   &view{db: s.db.Snapshot(), rev: tx.rev},
		done:   make(chan error, 1),
	}
	s.commits <- b
	s.writeMu.Unlock()

	select {
	case err := <-b.done:
		return b.rev, err
	case <-ctx.Done():
		return b.rev, ctx.Err()
	}
}

// DryRun runs fn as Txn would, on the current state, and keeps none of
// its writes: the objects fn writes are what a Txn would store, but the
// revision in their resourceVersion (which DryRun returns) is never given
// to a write. It is the API's dryRun=All: validation, admission and
// conflicts as for a real write, and nothing changed.
//
// As a transaction that writes nothing, its answer waits until every
// commit it read from is durable (see Txn).
func (s *Store) DryRun(ctx context.Context, fn func(tx *Txn) error) (uint64, error) {
	s.writeMu.Lock()
	if err := s.writable(); err != nil {
		s.writeMu.Unlock()
		return 0, err
	}
	tx := s.begin()
	err := fn(tx)
	tx.txn.Abort()
	b := s.barrier()
	s.writeMu.Unlock()
	if werr := s.awaitBarrier(ctx, b); werr != nil {
		return tx.rev, werr
	}
	if werr := s.confirmLead(ctx); werr != nil {
		return tx.rev, werr
	}
	if b != nil {
		s.refreshCurrent(err)
	}
	return tx.rev, err
}

// barrier returns, when a transaction applied to the tables is not
// durable yet, a batch that the commit loop answers in turn, once every
// batch before it is durable (nil) or has failed (their error); nil when
// the tables hold nothing undurable. As a database with group commit
// does, a transaction that read the tables answers only after what it
// read is durable: a create refused as a duplicate of a create the
// backend then refuses would tell its client of an object that never
// was. The caller holds writeMu.
func (s *Store) barrier() *batch {
	if s.view.Load().rev >= s.rev {
		return nil
	}
	b := &batch{rev: s.rev, barrier: true, done: make(chan error, 1)}
	s.commits <- b
	return b
}

// refreshCurrent makes the stored version a conflict names the newest
// again, after its answer waited for what it read to be durable: a
// writer that builds its next try on it (an unconditional update) would
// otherwise lose to every write made meanwhile.
func (s *Store) refreshCurrent(err error) {
	var oe *ObjectError
	if !errors.As(err, &oe) || !errors.Is(oe.Err, ErrConflict) || oe.Current == nil {
		return
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	r := reader{txn: s.db.Txn(false)}
	oe.Current, _ = r.Get(oe.Kind, oe.Namespace, oe.Name)
}

// awaitBarrier waits for b (see barrier). An error means the answer
// rested on writes the store could not make durable, or that the caller
// stopped waiting: either way nothing of the caller's was written.
func (s *Store) awaitBarrier(ctx context.Context, b *batch) error {
	if b == nil {
		return nil
	}
	select {
	case err := <-b.done:
		if err != nil && !errors.Is(err, ErrNotCommitted) {
			err = fmt.Errorf("%w: what it read was not made durable: %w", ErrNotCommitted, err)
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: the request ended while what it read was being made durable: %w", ErrNotCommitted, ctx.Err())
	}
}

// writable says why the store takes no writes, if it does not. The caller
// holds writeMu.
func (s *Store) writable() error {
	if s.closed {
		return ErrClosed
	}
	if s.following {
		return ErrNotLeader
	}
	return s.Err()
}

// begin starts the write transaction of the next revision. The caller
// holds writeMu.
func (s *Store) begin() *Txn {
	return &Txn{reader: reader{txn: s.db.Txn(true), rev: s.rev + 1}, store: s}
}

// encode fills in the Data of ops for a persistent backend, and refuses
// an object larger than the backend holds.
func (s *Store) encode(ops []Op) error {
	if !s.persistent {
		return nil
	}
	for i := range ops {
		op := &ops[i]
		if err := encodeOp(op); err != nil {
			return err
		}
		if s.maxObject > 0 && len(op.Data) > s.maxObject {
			return objectError(ErrInvalid, op.Kind, op.Namespace, op.Name,
				fmt.Sprintf("the object is %d bytes encoded, and the store holds objects up to %d", len(op.Data), s.maxObject))
		}
	}
	return nil
}

func encodeOp(op *Op) error {
	if op.Object == nil {
		return nil
	}
	data, err := json.Marshal(op.Object)
	if err != nil {
		return fmt.Errorf("encode %s %s/%s: %w", op.Kind.Resource, op.Namespace, op.Name, err)
	}
	op.Data = data
	return nil
}

// maxGroup bounds how many transactions one backend commit may carry.
const maxGroup = 1024

// commitLoop makes batches durable in revision order. Transactions that
// arrive while a commit is under way share the next one (group commit), so
// the disk sees one fsync for many transactions. Then it publishes the
// newest snapshot to readers, hands the events to watchers, and
// acknowledges the writers.
func (s *Store) commitLoop() {
	defer close(s.committed)
	group := make([]*batch, 0, maxGroup)
	var ops []Op
	for b := range s.commits {
		group = append(group[:0], b)
	drain:
		for len(group) < maxGroup {
			select {
			case nb, ok := <-s.commits:
				if !ok {
					break drain
				}
				group = append(group, nb)
			default:
				break drain
			}
		}
		// A probe is sent by the recovery holding writeMu, so it is the
		// last of its group: it follows every batch before it, which
		// fail as the store has.
		var probe *batch
		if last := group[len(group)-1]; last.probe {
			probe, group = last, group[:len(group)-1]
		}
		if len(group) > 0 {
			ops = s.commitGroup(group, ops)
		}
		if probe != nil {
			probe.done <- s.backend.(Recoverable).Probe()
		}
	}
}

// commitGroup commits one group of batches and answers their writers; ops
// is a buffer it returns for the next group.
func (s *Store) commitGroup(group []*batch, ops []Op) []Op {
	var last *batch
	ops = ops[:0]
	for _, g := range group {
		if !g.barrier {
			last = g
			ops = append(ops, g.ops...)
		}
	}
	err := s.failure()
	if err != nil {
		// Never tried: the backend refused an earlier commit, which the
		// tables held when these transactions read them.
		err = fmt.Errorf("%w: an earlier commit failed: %w", ErrNotCommitted, err)
	} else if last != nil {
		if err = s.backend.Commit(last.rev, ops); err != nil {
			err = fmt.Errorf("commit revision %d: %w", last.rev, err)
			if s.failed.CompareAndSwap(nil, &err) {
				s.wakeRecovery(err)
			}
		}
	}
	if err == nil && last != nil {
		s.publish(last.view)
		s.hub.dispatch(group)
	}
	for _, g := range group {
		g.done <- err
	}
	if cap(ops) > maxGroup {
		return nil // one big transaction (a source's first sync) need not stay allocated
	}
	clear(ops)
	return ops
}

// Err is why the store refuses writes after its backend failed to make one
// durable, or nil while it works: the "store" check of /readyz.
func (s *Store) Err() error {
	if err := s.failure(); err != nil {
		if s.failedCh != nil {
			return fmt.Errorf("store cannot write (retrying until it can): %w", err)
		}
		return fmt.Errorf("store failed: %w", err)
	}
	if p := s.behind.Load(); p != nil {
		return fmt.Errorf("store is %w", *p)
	}
	return nil
}

func (s *Store) failure() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Close stops the store: writes fail with ErrClosed, watchers end with
// ErrClosed, and the backend is closed once every acknowledged write is in.
func (s *Store) Close() error {
	s.writeMu.Lock()
	if s.closed {
		s.writeMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.commits)
	stopFollow := s.stopFollow
	s.writeMu.Unlock()
	if stopFollow != nil {
		stopFollow()
		<-s.followDone
	}
	if s.recoverStop != nil {
		close(s.recoverStop)
		<-s.recoverDone
	}
	<-s.committed
	s.hub.close(ErrClosed)
	return errors.Join(s.failure(), s.backend.Close())
}
