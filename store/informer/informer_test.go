package informer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
	"github.com/berth-dev/berth/testtool"
)

var (
	cmKind     = api.MustLookupResource("configmaps")
	secretKind = api.MustLookupResource("secrets")
)

func configMap(name string) *api.ConfigMap {
	return &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

func secret(name string) *api.Secret {
	return &api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

// view is one consumer's copy of a kind: what its listings and events
// made of it, and how many listings it had.
type view struct {
	mu     sync.Mutex
	kind   *api.Kind
	names  map[string]string // name → resourceVersion
	lists  int
	closed error
	// revs are the revisions of the events it was given, in order;
	// twice counts an object's change given more than once.
	revs  []uint64
	seen  map[string]bool
	twice int
}

func newView(k *api.Kind) *view {
	return &view{kind: k, names: map[string]string{}, seen: map[string]bool{}}
}

func (v *view) handler() informer.Handler {
	return informer.Handler{
		List: func(snap *store.Snapshot) error {
			v.mu.Lock()
			defer v.mu.Unlock()
			v.lists++
			clear(v.names)
			return snap.Each(v.kind, store.Filter{}, func(o api.Object) bool {
				v.names[o.GetName()] = o.GetResourceVersion()
				return true
			})
		},
		Event: func(e store.Event) {
			v.mu.Lock()
			defer v.mu.Unlock()
			v.revs = append(v.revs, e.Revision)
			change := fmt.Sprint(e.Revision, e.Type, e.Object.GetName())
			if v.seen[change] {
				v.twice++
			}
			v.seen[change] = true
			if e.Type == store.Deleted {
				delete(v.names, e.Object.GetName())
				return
			}
			v.names[e.Object.GetName()] = e.Object.GetResourceVersion()
		},
		Closed: func(err error) {
			v.mu.Lock()
			defer v.mu.Unlock()
			v.closed = err
		},
	}
}

// matches says how the view differs from the store's objects of its kind.
func (v *view) matches(s *store.Store) error {
	want := map[string]string{}
	err := s.Snapshot().Each(v.kind, store.Filter{}, func(o api.Object) bool {
		want[o.GetName()] = o.GetResourceVersion()
		return true
	})
	if err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if fmt.Sprint(v.names) != fmt.Sprint(want) {
		return fmt.Errorf("view %v, store %v", v.names, want)
	}
	if !slices.IsSorted(v.revs) || v.twice > 0 {
		return fmt.Errorf("events out of order or given twice: revisions %v", v.revs)
	}
	return nil
}

func newStore(t *testing.T, opts store.Options) *store.Store {
	t.Helper()
	s, err := store.New(store.Memory{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func start(t *testing.T, f *informer.Factory) {
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	t.Cleanup(func() {
		cancel()
		f.Wait()
	})
}

func create(t *testing.T, s *store.Store, objs ...api.Object) {
	t.Helper()
	_, err := s.Txn(context.Background(), func(tx *store.Txn) error {
		for _, o := range objs {
			if _, err := tx.Create(o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestConsumersShareOneInformer registers consumers before the factory
// starts, while it runs, and of two kinds at once: each sees its listing
// and then every change after it, once and in order, and a removed one
// sees no more.
func TestConsumersShareOneInformer(t *testing.T) {
	t.Parallel()
	s := newStore(t, store.Options{})
	create(t, s, configMap("a"), secret("x"))
	f := informer.NewFactory(s, clocktesting.NewFakeClock(time.Now()), nil)
	early := newView(cmKind)
	if _, err := f.Register(informer.Registration{Kind: cmKind, Handler: early.handler()}); err != nil {
		t.Fatal(err)
	}
	create(t, s, configMap("b")) // before Start: the watch still sees it
	start(t, f)
	create(t, s, configMap("c"))
	late, lateSecrets := newView(cmKind), newView(secretKind)
	remove, err := f.Register(
		informer.Registration{Kind: cmKind, Handler: late.handler()},
		informer.Registration{Kind: secretKind, Handler: lateSecrets.handler()},
	)
	if err != nil {
		t.Fatal(err)
	}
	create(t, s, configMap("d"), secret("y"))
	if _, err := s.Delete(context.Background(), cmKind, "default", "a", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []*view{early, late, lateSecrets} {
		testtool.WaitFor(t, 5*time.Second, "the view of "+v.kind.Resource+" to match the store", func() error { return v.matches(s) })
	}
	if early.lists != 1 || late.lists != 1 {
		t.Errorf("listings: early %d, late %d; want 1 each", early.lists, late.lists)
	}

	remove()
	create(t, s, configMap("e"))
	testtool.WaitFor(t, 5*time.Second, "the early view to see e", func() error { return early.matches(s) })
	late.mu.Lock()
	defer late.mu.Unlock()
	if _, ok := late.names["e"]; ok {
		t.Error("a removed consumer was given an event")
	}
}

// TestRelistsWhenBehind overruns the informer's watcher (a queue of two
// events) with one transaction of twenty: every consumer is listed again
// at once, without waiting for the clock.
func TestRelistsWhenBehind(t *testing.T) {
	t.Parallel()
	s := newStore(t, store.Options{History: 4, WatcherQueue: 2})
	f := informer.NewFactory(s, clocktesting.NewFakeClock(time.Now()), nil)
	one, two := newView(cmKind), newView(cmKind)
	for _, v := range []*view{one, two} {
		if _, err := f.Register(informer.Registration{Kind: cmKind, Handler: v.handler()}); err != nil {
			t.Fatal(err)
		}
	}
	start(t, f)
	var objs []api.Object
	for i := range 20 {
		objs = append(objs, configMap(fmt.Sprintf("c%d", i)))
	}
	create(t, s, objs...)
	for _, v := range []*view{one, two} {
		testtool.WaitFor(t, 5*time.Second, "every object after the relist", func() error { return v.matches(s) })
		v.mu.Lock()
		if v.lists < 2 {
			t.Errorf("listed %d times; the watch was not lost (the test tests nothing)", v.lists)
		}
		v.mu.Unlock()
	}
}

// TestClosedStoreEndsInformer closes the store: every consumer is told,
// and one registered after is told at once.
func TestClosedStoreEndsInformer(t *testing.T) {
	t.Parallel()
	s := newStore(t, store.Options{})
	f := informer.NewFactory(s, clocktesting.NewFakeClock(time.Now()), nil)
	before := newView(cmKind)
	if _, err := f.Register(informer.Registration{Kind: cmKind, Handler: before.handler()}); err != nil {
		t.Fatal(err)
	}
	start(t, f)
	s.Close()
	closed := func(v *view) func() error {
		return func() error {
			v.mu.Lock()
			defer v.mu.Unlock()
			if !errors.Is(v.closed, store.ErrClosed) {
				return fmt.Errorf("closed with %v", v.closed)
			}
			return nil
		}
	}
	testtool.WaitFor(t, 5*time.Second, "the consumer to be told the store closed", closed(before))
	after := newView(cmKind)
	if _, err := f.Register(informer.Registration{Kind: cmKind, Handler: after.handler()}); err != nil {
		t.Fatal(err)
	}
	if err := closed(after)(); err != nil {
		t.Error(err)
	}
}

// TestListFailureRegistersNothing: a consumer whose listing fails is not
// registered, and the error names the kind.
func TestListFailureRegistersNothing(t *testing.T) {
	t.Parallel()
	s := newStore(t, store.Options{})
	f := informer.NewFactory(s, nil, nil)
	start(t, f)
	ok := newView(cmKind)
	bad := informer.Handler{List: func(*store.Snapshot) error { return errors.New("boom") }, Event: func(store.Event) {}}
	_, err := f.Register(
		informer.Registration{Kind: cmKind, Handler: ok.handler()},
		informer.Registration{Kind: secretKind, Handler: bad},
	)
	if err == nil || err.Error() != "list secrets: boom" {
		t.Fatalf("err %v, want list secrets: boom", err)
	}
	// A consumer registered after it is given the change; the informer
	// gives each change to its consumers in turn, so by then the failed
	// one would have had it too.
	control := newView(cmKind)
	if _, err := f.Register(informer.Registration{Kind: cmKind, Handler: control.handler()}); err != nil {
		t.Fatal(err)
	}
	create(t, s, configMap("a"))
	testtool.WaitFor(t, 5*time.Second, "the control consumer to see a", func() error { return control.matches(s) })
	ok.mu.Lock()
	defer ok.mu.Unlock()
	if len(ok.revs) != 0 {
		t.Errorf("a consumer of a failed registration got events at %v", ok.revs)
	}
}
