package store

// Fork returns a store of its own that starts from this one's newest
// durable state and that nothing else sees: its tables are a memdb
// snapshot of this store's, so the fork costs a pointer at first and
// copies only the tree nodes its writes touch. Writes to the fork go to
// memory (no backend), run the same admission (opts.Admit is this store's
// unless opts sets its own), and leave this store untouched; writes to
// this store after the fork are not seen by it. It is what a plan runs
// the applier, the controllers and the scheduler on. Its writes are seen
// as they commit, with no trip through a commit loop. Close it when done.
func (s *Store) Fork(opts Options) *Store {
	if opts.Clock == nil {
		opts.Clock = s.opts.Clock
	}
	if opts.Logger == nil {
		opts.Logger = s.opts.Logger
	}
	if opts.Admit == nil {
		opts.Admit = s.opts.Admit
	}
	if opts.History <= 0 {
		// Nothing replays a fork's past: watchers start at its present.
		opts.History = 64
	}
	if opts.WatcherQueue <= 0 {
		opts.WatcherQueue = s.opts.WatcherQueue
	}
	v := s.view.Load()
	f := &Store{
		kindRevs:  newKindRevisions(),
		opts:      opts,
		clock:     opts.Clock,
		backend:   Memory{},
		db:        v.db.Snapshot(),
		rev:       v.rev,
		commits:   make(chan *batch, 256),
		committed: make(chan struct{}),
		advanced:  make(chan struct{}),
		uid:       s.uid,
		forked:    true,
		kinds:     s.kinds.copyKinds(),
	}
	f.view.Store(&view{db: f.db.Snapshot(), rev: v.rev})
	f.hub = newHub(v.rev, opts.History, opts.WatcherQueue)
	go f.commitLoop()
	return f
}
