package store_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/etcd"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
	"github.com/berth-dev/berth/testtool"
)

// heldBackend is an etcd backend whose commits, once held, wait for the
// test before they go to etcd: a leader frozen between taking a write
// and writing it.
type heldBackend struct {
	*etcd.Backend
	hold    atomic.Bool
	entered chan uint64
	release chan struct{}
}

func (h *heldBackend) Commit(rev uint64, ops []store.Op) error {
	if h.hold.Load() {
		h.entered <- rev
		<-h.release
	}
	return h.Backend.Commit(rev, ops)
}

func openEtcd(t *testing.T, ep string) *etcd.Backend {
	t.Helper()
	b, err := etcd.Open(context.Background(), etcd.Options{Endpoints: []string{ep}, LeaseTTL: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openStore(t *testing.T, b store.Backend) *store.Store {
	t.Helper()
	s, err := store.New(b, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The race of a deposed leader, made deterministic: a create is taken
// by the leader, which then stalls before writing it; meanwhile the
// election passes to another server; the client, having heard nothing,
// sends the create again to the old leader. That retry must not be
// answered 409 AlreadyExists from the first create, which etcd's
// election fence then refuses: the object never existed, and a client
// that takes a 409 on a retry for success would lose it.
func TestDeposedLeaderNeverAnswersFromARefusedCommit(t *testing.T) {
	ep := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	held := &heldBackend{Backend: openEtcd(t, ep), entered: make(chan uint64, 1), release: make(chan struct{})}
	old := openStore(t, held)
	if err := old.Lead(ctx, "https://old.test"); err != nil {
		t.Fatal(err)
	}
	standby := openStore(t, openEtcd(t, ep))
	release := sync.OnceFunc(func() { close(held.release) })
	t.Cleanup(release)
	cm := func() *api.ConfigMap {
		return &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}, Data: map[string]string{"v": "1"}}
	}

	held.hold.Store(true)
	first := make(chan error, 1)
	go func() { _, err := old.Create(ctx, cm()); first <- err }()
	<-held.entered

	// The old leader's election key goes, as when its lease ran out
	// while it was frozen; the standby is elected.
	cli := held.Client()
	if _, err := cli.Delete(ctx, held.Prefix()+"/leader", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if err := standby.Lead(ctx, "https://new.test"); err != nil {
		t.Fatal(err)
	}

	retry := make(chan error, 1)
	go func() { _, err := old.Create(ctx, cm()); retry <- err }()
	testtool.WaitFor(t, 20*time.Second, "the retry to wait behind the held commit", func() error {
		select {
		case err := <-retry:
			t.Fatalf("the retry answered %v while the create it met was not durable", err)
		default:
		}
		if old.Waiting() == 0 {
			return errors.New("not yet")
		}
		return nil
	})
	release()

	if err := <-first; !errors.Is(err, store.ErrNotLeader) {
		t.Fatalf("the create etcd's election refused: %v, want store.ErrNotLeader", err)
	}
	err := <-retry
	if store.IsAlreadyExists(err) || !errors.Is(err, store.ErrNotCommitted) {
		t.Fatalf("the retry on the deposed leader: %v, want store.ErrNotCommitted", err)
	}
	if _, err := standby.Get(api.KindOf(cm()), "default", "x"); !store.IsNotFound(err) {
		t.Fatalf("x on the new leader: %v, want not found", err)
	}
	// Sent again to the new leader, the create is made.
	if _, err := standby.Create(ctx, cm()); err != nil {
		t.Fatal(err)
	}
}

// A server may lead, lose the election, step down and lead again, term
// after term: each term's follower is a new goroutine in the same
// fields, which the race detector watches here.
func TestLeadStepDownTermAfterTerm(t *testing.T) {
	ep := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := openEtcd(t, ep)
	s := openStore(t, b)
	for term := range 4 {
		if err := s.Lead(ctx, "https://a.test"); err != nil {
			t.Fatalf("term %d: lead: %v", term, err)
		}
		name := fmt.Sprintf("term-%d", term)
		if _, err := s.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}); err != nil {
			t.Fatalf("term %d: the leader's write: %v", term, err)
		}
		if _, err := b.Client().Delete(ctx, b.Prefix()+"/leader", clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-late"}}); !errors.Is(err, store.ErrNotLeader) {
			t.Fatalf("term %d: a deposed leader's write: %v, want store.ErrNotLeader", term, err)
		}
		if err := s.StepDown(); err != nil {
			t.Fatalf("term %d: step down: %v", term, err)
		}
		if !s.Following() {
			t.Fatalf("term %d: not following after stepping down", term)
		}
	}
	if err := s.Lead(ctx, "https://a.test"); err != nil {
		t.Fatal(err)
	}
	configMaps := api.MustLookupResource("configmaps")
	for term := range 4 {
		name := fmt.Sprintf("term-%d", term)
		if _, err := s.Get(configMaps, "default", name); err != nil {
			t.Errorf("%s, written in its term: %v", name, err)
		}
		if _, err := s.Get(configMaps, "default", name+"-late"); !store.IsNotFound(err) {
			t.Errorf("%s-late, refused: %v, want not found", name, err)
		}
	}
}
