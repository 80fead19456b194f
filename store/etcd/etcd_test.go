package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
	"github.com/berth-dev/berth/store/storetest"
	"github.com/berth-dev/berth/testtool"
)

var (
	cmKind  = api.MustLookupResource("configmaps")
	podKind = api.MustLookupResource("pods")
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// open opens a backend on etcd at endpoint; the test closes it.
func open(t testing.TB, endpoint string, tune func(*Options)) *Backend {
	t.Helper()
	o := Options{Endpoints: []string{endpoint}, LeaseTTL: 2 * time.Second, Logger: quiet()}
	if tune != nil {
		tune(&o)
	}
	b, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newStore opens a store over b; the test closes it (and b with it).
func newStore(t testing.TB, b *Backend) *store.Store {
	t.Helper()
	s, err := store.New(b, store.Options{Logger: quiet()})
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// leader opens a store over a new backend and makes it lead.
func leader(t testing.TB, endpoint string, tune func(*Options)) (*Backend, *store.Store) {
	t.Helper()
	b := open(t, endpoint, tune)
	s := newStore(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Lead(ctx, "https://leader.test"); err != nil {
		t.Fatal(err)
	}
	return b, s
}

func configMap(name, value string) *api.ConfigMap {
	return &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"v": value}}
}

// contents is every object of a store, encoded, by kind and key.
func contents(t testing.TB, s *store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	snap := s.Snapshot()
	for _, k := range api.Kinds() {
		err := snap.Each(k, store.Filter{}, func(o api.Object) bool {
			b, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			out[k.Resource+" "+o.GetNamespace()+"/"+o.GetName()] = string(b)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// caughtUp waits until the follower sees the leader's revision, and then
// compares their objects.
func caughtUp(t testing.TB, lead, follower *store.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := follower.WaitRevision(ctx, lead.Revision()); err != nil {
		t.Fatalf("follower at revision %d, leader at %d: %v", follower.Revision(), lead.Revision(), err)
	}
	want, got := contents(t, lead), contents(t, follower)
	if !maps.Equal(want, got) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: follower has %s, leader %s", k, got[k], v)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: only the follower has it", k)
			}
		}
		t.FailNow()
	}
}

// writeSome makes n transactions of creates, updates and deletes.
func writeSome(t testing.TB, s *store.Store, n int, tag string) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		_, err := s.Txn(ctx, func(tx *store.Txn) error {
			name := fmt.Sprintf("%s-%d", tag, i)
			if _, err := tx.Create(configMap(name, "1")); err != nil {
				return err
			}
			cm, err := tx.Get(cmKind, "default", name)
			if err != nil {
				return err
			}
			c := cm.DeepCopyObject().(*api.ConfigMap)
			c.Data["v"] = "2"
			if _, err := tx.Update(c); err != nil {
				return err
			}
			if i%3 == 2 {
				_, err = tx.Delete(cmKind, "default", fmt.Sprintf("%s-%d", tag, i-1), store.DeleteOptions{})
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestFollowerSeesTheLeadersCommits(t *testing.T) {
	ep := etcdtest.Start(t)
	_, lead := leader(t, ep, nil)
	follower := newStore(t, open(t, ep, nil))
	if !follower.Following() || lead.Following() {
		t.Fatalf("following: leader %v, follower %v", lead.Following(), follower.Following())
	}
	if _, err := follower.Create(context.Background(), configMap("x", "1")); !errors.Is(err, store.ErrNotLeader) {
		t.Fatalf("a follower's write: %v, want ErrNotLeader", err)
	}
	ctx := context.Background()
	lw, err := lead.Watch(ctx, store.WatchOptions{Kind: cmKind, Revision: lead.Revision()})
	if err != nil {
		t.Fatal(err)
	}
	fw, err := follower.Watch(ctx, store.WatchOptions{Kind: cmKind, Revision: follower.Revision()})
	if err != nil {
		t.Fatal(err)
	}
	writeSome(t, lead, 9, "a")
	// Pods through their indexes too: the follower's tables index them.
	for i := range 5 {
		if _, err := lead.Create(ctx, storetest.Pod(i, storetest.NodeName(i, 2))); err != nil {
			t.Fatal(err)
		}
	}
	caughtUp(t, lead, follower)
	pods, err := follower.Snapshot().List(podKind, store.Filter{Index: store.IndexNode, Value: "node-1"})
	if err != nil || len(pods) != 2 {
		t.Fatalf("the follower's pods of node-1: %d, %v", len(pods), err)
	}
	// Both watches deliver the same events, revisions and all.
	for i := 0; i < 9*2+3; i++ {
		le, err := lw.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fe, err := fw.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if le.Type != fe.Type || le.Revision != fe.Revision || le.Object.GetName() != fe.Object.GetName() ||
			le.Object.GetResourceVersion() != fe.Object.GetResourceVersion() || (le.Old == nil) != (fe.Old == nil) {
			t.Fatalf("event %d: leader %s %s@%d (rv %s), follower %s %s@%d (rv %s)", i,
				le.Type, le.Object.GetName(), le.Revision, le.Object.GetResourceVersion(),
				fe.Type, fe.Object.GetName(), fe.Revision, fe.Object.GetResourceVersion())
		}
	}
}

func TestRestartLoadsTheCommits(t *testing.T) {
	ep := etcdtest.Start(t)
	b, lead := leader(t, ep, nil)
	writeSome(t, lead, 6, "a")
	want, rev := contents(t, lead), lead.Revision()
	lead.Close()
	b.Close()
	again := newStore(t, open(t, ep, nil))
	if again.Revision() != rev {
		t.Errorf("revision after a restart %d, want %d", again.Revision(), rev)
	}
	if got := contents(t, again); !maps.Equal(got, want) {
		t.Errorf("after a restart:\n%v\nwant\n%v", got, want)
	}
}

func TestCheckpointFoldsTheLog(t *testing.T) {
	ep := etcdtest.Start(t)
	b, lead := leader(t, ep, func(o *Options) { o.CheckpointCommits = 1 << 30 })
	follower := newStore(t, open(t, ep, nil))
	writeSome(t, lead, 12, "a")
	if err := b.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeSome(t, lead, 4, "b")
	caughtUp(t, lead, follower)

	cp, _, err := b.checkpoint(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if cp == 0 {
		t.Fatal("no checkpoint written")
	}
	resp, err := b.cli.Get(context.Background(), b.prefix+logDir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if rev, _, _ := parseLogKey(b.prefix, string(kv.Key)); rev <= cp {
			t.Errorf("log key %s at or before the checkpoint %d is still there", kv.Key, cp)
		}
	}
	if len(resp.Kvs) != 4 {
		t.Errorf("%d log keys after the checkpoint, want the 4 commits since", len(resp.Kvs))
	}
	// A new control plane loads the checkpoint and the log after it.
	again := newStore(t, open(t, ep, nil))
	caughtUp(t, lead, again)
}

func TestCheckpointCutShortLoadsTheSame(t *testing.T) {
	ep := etcdtest.Start(t)
	b, lead := leader(t, ep, func(o *Options) { o.CheckpointCommits = 1 << 30 })
	writeSome(t, lead, 9, "a")
	want, rev := contents(t, lead), lead.Revision()
	// A checkpoint that wrote the objects and stopped before its
	// revision, and one that wrote its revision and stopped before
	// deleting the log: both load as the whole log would.
	ctx := context.Background()
	l := b.lead.Load()
	objects := map[string]map[string][]byte{}
	asm := newAssembler(b.prefix)
	resp, err := b.cli.Get(ctx, b.prefix+logDir, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if _, parts, err := asm.add(string(kv.Key), kv.Value); err != nil {
			t.Fatal(err)
		} else if parts != nil {
			fold(objects, parts)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(objects)) {
		for name, data := range objects[r] {
			op := clientv3.OpDelete(objectKey(b.prefix, r, name))
			if data != nil {
				op = clientv3.OpPut(objectKey(b.prefix, r, name), string(data))
			}
			if err := b.fenced(l, op); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		s := newStore(t, open(t, ep, nil))
		if s.Revision() != rev {
			t.Errorf("%s: revision %d, want %d", when, s.Revision(), rev)
		}
		if got := contents(t, s); !maps.Equal(got, want) {
			t.Errorf("%s: loads\n%v\nwant\n%v", when, got, want)
		}
	}
	check("objects written, no checkpoint revision")
	if err := b.fenced(l, clientv3.OpPut(b.prefix+checkpointKey, fmt.Sprint(rev))); err != nil {
		t.Fatal(err)
	}
	check("checkpoint revision written, log not deleted")
}

func TestUnfinishedCommitIsDropped(t *testing.T) {
	ep := etcdtest.Start(t)
	first, lead := leader(t, ep, nil)
	writeSome(t, lead, 2, "a")
	want, rev := contents(t, lead), lead.Revision()
	// The leader writes the first part of a two-part commit, and dies.
	big := strings.Repeat("x", maxPartBytes/2)
	var ops []store.Op
	for i := range 3 {
		cm := configMap(fmt.Sprintf("big-%d", i), big)
		data, err := json.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, store.Op{Kind: cmKind, Namespace: "default", Name: cm.Name, Object: cm, Data: data, Revision: rev + 1})
	}
	parts, err := encodeParts(rev+1, ops)
	if err != nil || len(parts) < 2 {
		t.Fatalf("%d parts, %v", len(parts), err)
	}
	follower := newStore(t, open(t, ep, nil))
	if err := first.put(first.lead.Load(), logKey(first.prefix, rev+1, 0), parts[0]); err != nil {
		t.Fatal(err)
	}
	lead.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := follower.Lead(ctx, "https://second.test"); err != nil {
		t.Fatal(err)
	}
	if follower.Revision() != rev {
		t.Fatalf("the new leader leads from %d, want %d", follower.Revision(), rev)
	}
	if got := contents(t, follower); !maps.Equal(got, want) {
		t.Fatalf("the new leader holds\n%v\nwant\n%v", got, want)
	}
	// Its own commit of that revision is whole, and loads.
	if _, err := follower.Create(ctx, configMap("after", "1")); err != nil {
		t.Fatal(err)
	}
	again := newStore(t, open(t, ep, nil))
	caughtUp(t, follower, again)
}

func TestFailover(t *testing.T) {
	ep := etcdtest.Start(t)
	first, lead := leader(t, ep, nil)
	writeSome(t, lead, 3, "a")
	second := open(t, ep, nil)
	standby := newStore(t, second)
	led := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { led <- standby.Lead(ctx, "https://second.test") }()
	// The campaign waits while the first leads.
	select {
	case err := <-led:
		t.Fatalf("the standby led while the leader held the election: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	if v, ok, err := second.Leader(ctx); err != nil || !ok || v != "https://leader.test" {
		t.Fatalf("Leader: %q %v %v", v, ok, err)
	}
	// The first leader's lease is revoked under it, as when it stops
	// renewing: its next commit is refused, and it says it lost.
	l := first.lead.Load()
	if _, err := first.cli.Revoke(ctx, l.session.Lease()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-led:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the standby was not elected")
	}
	if _, err := lead.Create(context.Background(), configMap("late", "1")); err == nil {
		t.Fatal("the old leader committed after losing the election")
	}
	select {
	case <-lead.Lost():
	case <-ctx.Done():
		t.Fatal("the old leader does not say it lost")
	}
	if _, err := standby.Create(ctx, configMap("after", "1")); err != nil {
		t.Fatal(err)
	}
	if _, err := standby.Get(cmKind, "default", "late"); !store.IsNotFound(err) {
		t.Fatalf("the refused commit is in the new leader's store: %v", err)
	}
	if v, ok, err := second.Leader(ctx); err != nil || !ok || v != "https://second.test" {
		t.Fatalf("Leader after the failover: %q %v %v", v, ok, err)
	}
}

func TestFollowerResyncsAfterCompaction(t *testing.T) {
	ep := etcdtest.Start(t)
	b, lead := leader(t, ep, func(o *Options) { o.CheckpointCommits = 1 << 30 })
	writeSome(t, lead, 3, "a")
	fb := open(t, ep, nil)
	gate := make(chan struct{})
	fb.beforeWatch = func() { <-gate }
	follower := newStore(t, fb)
	// While the follower waits to watch: more commits, a checkpoint
	// that deletes the log it would have read, and etcd's history
	// compacted past it.
	writeSome(t, lead, 6, "b")
	if _, err := lead.Delete(context.Background(), cmKind, "default", "a-0", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err := b.cli.Get(context.Background(), b.prefix+formatKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.cli.Compact(context.Background(), resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w, err := follower.Watch(ctx, store.WatchOptions{Kind: cmKind, Revision: follower.Revision()})
	if err != nil {
		t.Fatal(err)
	}
	close(gate)
	caughtUp(t, lead, follower)
	// The watcher saw the difference, each object that changed once: the
	// b-* made while it waited and a-0 deleted, and nothing else of what
	// it had.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	seen := map[string]store.EventType{}
	for len(seen) < 5 {
		e, err := w.Next(wctx)
		if err != nil {
			t.Fatalf("after %v: %v", seen, err)
		}
		seen[e.Object.GetName()] = e.Type
	}
	want := map[string]store.EventType{"a-0": store.Deleted, "b-0": store.Added, "b-2": store.Added, "b-3": store.Added, "b-5": store.Added}
	if !maps.Equal(seen, want) {
		t.Errorf("events after the resync: %v, want %v", seen, want)
	}
}

func TestOversizedObjectIsRefused(t *testing.T) {
	ep := etcdtest.Start(t)
	_, lead := leader(t, ep, nil)
	_, err := lead.Create(context.Background(), configMap("huge", strings.Repeat("x", MaxObjectBytes)))
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "holds objects up to") {
		t.Fatalf("an object over the limit: %v", err)
	}
	// The store still takes writes.
	if _, err := lead.Create(context.Background(), configMap("fine", "1")); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesAnotherFormat(t *testing.T) {
	ep := etcdtest.Start(t)
	b := open(t, ep, nil)
	if _, err := b.cli.Put(context.Background(), b.prefix+formatKey, "9"); err != nil {
		t.Fatal(err)
	}
	b.Close()
	_, err := Open(context.Background(), Options{Endpoints: []string{ep}, Logger: quiet()})
	if err == nil || !strings.Contains(err.Error(), `format "9"`) {
		t.Fatalf("Open over another format: %v", err)
	}
	// Another prefix is another store.
	other, err := Open(context.Background(), Options{Endpoints: []string{ep}, Prefix: "/other", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
}

// A leader whose commit etcd refuses while its lease still holds gives
// the election up at once: another control plane takes over without
// waiting for the lease to run out.
func TestLostLeadershipIsGivenUp(t *testing.T) {
	ep := etcdtest.Start(t)
	first, lead := leader(t, ep, func(o *Options) { o.LeaseTTL = time.Minute })
	standby := newStore(t, open(t, ep, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	led := make(chan error, 1)
	go func() { led <- standby.Lead(ctx, "https://second.test") }()
	// Over etcd's request limit of 1.5 MiB, past the store's own check.
	cm := configMap("huge", strings.Repeat("x", 8<<20/5))
	data, err := json.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	rev := lead.Revision() + 1
	if err := first.Commit(rev, []store.Op{{Kind: cmKind, Namespace: "default", Name: "huge", Object: cm, Data: data, Revision: rev}}); err == nil {
		t.Fatal("etcd took a commit over its request limit")
	}
	select {
	case <-lead.Lost():
	case <-ctx.Done():
		t.Fatal("the leader does not say it lost")
	}
	select {
	case err := <-led:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the standby was not elected: the old leader holds the election until its lease runs out")
	}
}

// A commit a follower cannot read fails it, whatever the commit names:
// an error about what etcd holds is never taken for a connection that
// failed, and the follower never goes on past the commit as if it had
// applied it.
func TestUnreadableCommitFailsTheFollower(t *testing.T) {
	ep := etcdtest.Start(t)
	b, lead := leader(t, ep, nil)
	follower := newStore(t, open(t, ep, nil))
	writeSome(t, lead, 1, "a")
	caughtUp(t, lead, follower)
	rev := lead.Revision() + 100
	bad := fmt.Sprintf(`{"revision":%d,"last":true,"ops":[{"resource":"configmaps","namespace":"default","name":"connection-pool","revision":%[1]d,"object":{"data":"not a map"}}]}`, rev)
	if _, err := b.cli.Put(context.Background(), logKey(b.prefix, rev, 0), bad); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 20*time.Second, "the follower to fail", func() error {
		if err := follower.Err(); err == nil || !strings.Contains(err.Error(), "connection-pool") {
			return fmt.Errorf("the follower's error: %v", err)
		}
		return nil
	})
}

// A candidate whose election lease expires while it waits (etcd out of
// reach for longer than the lease takes every lease at once, the leader's
// and the candidates') campaigns again under a new lease and leads,
// rather than taking the leader's key going for its own election.
func TestCandidateCampaignsAgainAfterItsLeaseExpired(t *testing.T) {
	ep := etcdtest.Start(t)
	first, _ := leader(t, ep, nil)
	second := open(t, ep, nil)
	standby := newStore(t, second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	led := make(chan error, 1)
	go func() { led <- standby.Lead(ctx, "https://second.test") }()
	candidate := candidateLease(ctx, t, first, "https://second.test")
	if _, err := first.cli.Revoke(ctx, candidate); err != nil {
		t.Fatal(err)
	}
	if _, err := first.cli.Revoke(ctx, first.lead.Load().session.Lease()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-led:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the standby was not elected")
	}
	if _, err := standby.Create(ctx, configMap("after", "1")); err != nil {
		t.Fatalf("the new leader cannot commit: %v", err)
	}
	select {
	case <-standby.Lost():
		t.Fatal("the new leader says it lost")
	default:
	}
	if v, ok, err := second.Leader(ctx); err != nil || !ok || v != "https://second.test" {
		t.Fatalf("Leader: %q %v %v", v, ok, err)
	}
}

// candidateLease waits until a campaign announcing value has put its key,
// and returns that key's lease.
func candidateLease(ctx context.Context, t *testing.T, b *Backend, value string) clientv3.LeaseID {
	t.Helper()
	for ctx.Err() == nil {
		resp, err := b.cli.Get(ctx, b.prefix+leaderDir+"/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			if string(kv.Value) == value {
				return clientv3.LeaseID(kv.Lease)
			}
		}
	}
	t.Fatalf("no campaign announced %s", value)
	return 0
}

// A candidate stopped while etcd does not answer stops at once, and so
// does its backend, rather than waiting for etcd to resign its campaign.
func TestCandidateStopsWhileEtcdIsOutOfReach(t *testing.T) {
	ep := etcdtest.Start(t)
	first, _ := leader(t, ep, nil)
	proxy := testtool.StartStallProxy(t, strings.TrimPrefix(ep, "http://"))
	clk := clocktesting.NewFakeClock(time.Now())
	second := open(t, "http://"+proxy.Addr, func(o *Options) { o.Clock = clk })
	standby, err := store.New(second, store.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	campaign, stop := context.WithCancel(ctx)
	led := make(chan error, 1)
	go func() { led <- standby.Lead(campaign, "https://second.test") }()
	candidateLease(ctx, t, first, "https://second.test")
	proxy.Stall()
	stop()
	stopsAtOnce(ctx, t, standby, clk, led)
}

// stopsAtOnce checks that a campaign given up while etcd does not answer
// ends at once (led is what its Lead returned), and that its store,
// closed on clk, closes without etcd.
func stopsAtOnce(ctx context.Context, t *testing.T, standby *store.Store, clk *clocktesting.FakeClock, led <-chan error) {
	t.Helper()
	select {
	case err := <-led:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Lead: %v, want the campaign's context canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("the campaign waits for etcd after its context ended")
	}
	// Close gives the campaign a while to resign, then closes the
	// client, which ends it.
	closed := make(chan error, 1)
	go func() { closed <- standby.Close() }()
	for {
		select {
		case <-closed:
			return
		case <-ctx.Done():
			t.Fatal("closing the store waits for etcd")
		case <-time.After(10 * time.Millisecond):
			if clk.HasWaiters() {
				clk.Step(requestTimeout)
			}
		}
	}
}

// A candidate stopped while etcd answers takes its key out of the
// election before its backend closes: the key would otherwise hold back
// the next election until its lease ran out.
func TestStoppedCandidateResigns(t *testing.T) {
	ep := etcdtest.Start(t)
	first, _ := leader(t, ep, nil)
	second := open(t, ep, nil)
	standby, err := store.New(second, store.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	campaign, stop := context.WithCancel(ctx)
	led := make(chan error, 1)
	go func() { led <- standby.Lead(campaign, "https://second.test") }()
	candidateLease(ctx, t, first, "https://second.test")
	stop()
	<-led
	if err := standby.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err := first.cli.Get(ctx, first.prefix+leaderDir+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if string(kv.Value) == "https://second.test" {
			t.Fatalf("the stopped candidate's key %s is still in the election", kv.Key)
		}
	}
}

// A commit refused because another control plane holds the election was
// not written: it says so as store.ErrNotLeader, which the API answers
// with a 503 to try again, and the store says it lost.
func TestCommitRefusedByTheElectionIsNotLeader(t *testing.T) {
	ep := etcdtest.Start(t)
	first, lead := leader(t, ep, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The election key gone under a live lease: etcd refuses the next
	// commit, which is fenced on it.
	if _, err := first.cli.Delete(ctx, first.lead.Load().election.Key()); err != nil {
		t.Fatal(err)
	}
	_, err := lead.Create(ctx, configMap("refused", "1"))
	if !errors.Is(err, store.ErrNotLeader) {
		t.Fatalf("a commit the election refused: %v, want store.ErrNotLeader", err)
	}
	select {
	case <-lead.Lost():
	case <-ctx.Done():
		t.Fatal("the leader does not say it lost")
	}
}

// A follower whose load after a compaction fails (etcd out of reach just
// then) tries again, says meanwhile that it is behind, and catches up.
func TestFollowerResyncRetries(t *testing.T) {
	ep := etcdtest.Start(t)
	b, lead := leader(t, ep, func(o *Options) { o.CheckpointCommits = 1 << 30 })
	fb := open(t, ep, nil)
	gate := make(chan struct{})
	fb.beforeWatch = func() { <-gate }
	follower := newStore(t, fb)
	// Its loads fail until the test has seen it say it is behind.
	seen := make(chan struct{})
	fb.beforeLoad = func() error {
		select {
		case <-seen:
			return nil
		default:
			return errors.New("etcd out of reach")
		}
	}
	writeSome(t, lead, 3, "b")
	if err := b.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err := b.cli.Get(context.Background(), b.prefix+formatKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.cli.Compact(context.Background(), resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	close(gate)
	testtool.WaitFor(t, 20*time.Second, "the follower to say it is behind", func() error {
		if err := follower.Err(); err == nil || !strings.Contains(err.Error(), "behind the leader") {
			return fmt.Errorf("Err: %v", err)
		}
		return nil
	})
	close(seen)
	caughtUp(t, lead, follower)
	if err := follower.Err(); err != nil {
		t.Fatalf("caught up, the follower still says: %v", err)
	}
}

// A candidate that asks for its election lease while etcd does not
// answer (campaigning again after its lease expired in an outage, say)
// stops at once when its campaign is given up, and so does its backend:
// a server stopped then exits rather than waiting for etcd to answer.
func TestCandidateStopsWhileItsLeaseIsAskedFor(t *testing.T) {
	ep := etcdtest.Start(t)
	proxy := testtool.StartStallProxy(t, strings.TrimPrefix(ep, "http://"))
	clk := clocktesting.NewFakeClock(time.Now())
	second := open(t, "http://"+proxy.Addr, func(o *Options) { o.Clock = clk })
	standby, err := store.New(second, store.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proxy.Stall()
	campaign, stop := context.WithCancel(ctx)
	led := make(chan error, 1)
	go func() { led <- standby.Lead(campaign, "https://second.test") }()
	stop()
	stopsAtOnce(ctx, t, standby, clk, led)
}

// A campaign given up just as etcd elects it takes its key out of the
// election all the same: the key would otherwise lead it, and hold back
// the next, until its lease ran out.
func TestCandidateElectedAsItIsStoppedResigns(t *testing.T) {
	ep := etcdtest.Start(t)
	first, lead := leader(t, ep, nil)
	second := open(t, ep, nil)
	standby := newStore(t, second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	campaign, stop := context.WithCancel(ctx)
	led := make(chan error, 1)
	returned := make(chan struct{})
	second.elected = func() {
		// Given up before it hears that it won.
		stop()
		select {
		case <-returned:
		case <-ctx.Done():
		}
	}
	go func() {
		led <- standby.Lead(campaign, "https://second.test")
		close(returned)
	}()
	candidateLease(ctx, t, first, "https://second.test")
	// The leader resigns: etcd elects the standby.
	if err := lead.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-led:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Lead: %v, want the campaign's context canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("the campaign never ended")
	}
	if err := standby.Close(); err != nil {
		t.Fatal(err)
	}
	check := open(t, ep, nil)
	t.Cleanup(func() { check.Close() })
	if v, ok, err := check.Leader(ctx); err != nil || ok {
		t.Fatalf("after both stopped, the election is led by %q (%v, %v), want none", v, ok, err)
	}
}

// A follower that fell behind etcd's history and cannot load it again
// yet, elected with every commit the log holds, leads and takes writes:
// it is behind no leader any more.
func TestFollowerBehindThatIsElectedTakesWrites(t *testing.T) {
	ep := etcdtest.Start(t)
	b, lead := leader(t, ep, nil)
	writeSome(t, lead, 3, "a")
	fb := open(t, ep, nil)
	gate := make(chan struct{})
	fb.beforeWatch = func() { <-gate }
	follower := newStore(t, fb)
	fb.beforeLoad = func() error { return errors.New("etcd out of reach") }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// etcd's history moves past where the follower watches from, with
	// no commit in it.
	var at int64
	for range 2 {
		resp, err := b.cli.Put(ctx, "/elsewhere", "x")
		if err != nil {
			t.Fatal(err)
		}
		at = resp.Header.Revision
	}
	if _, err := b.cli.Compact(ctx, at); err != nil {
		t.Fatal(err)
	}
	close(gate)
	testtool.WaitFor(t, 20*time.Second, "the follower to say it is behind", func() error {
		if err := follower.Err(); err == nil || !strings.Contains(err.Error(), "behind the leader") {
			return fmt.Errorf("Err: %v", err)
		}
		return nil
	})
	if err := lead.Close(); err != nil {
		t.Fatal(err)
	}
	if err := follower.Lead(ctx, "https://second.test"); err != nil {
		t.Fatal(err)
	}
	if _, err := follower.Create(ctx, configMap("after", "1")); err != nil {
		t.Fatalf("the new leader refuses a write: %v", err)
	}
	if err := follower.Err(); err != nil {
		t.Fatalf("leading, the store says: %v", err)
	}
}

// A commit refused by the election after a try whose answer was lost is
// no store.ErrNotLeader: etcd may have taken that try, and a client told
// to try again would make a create twice, or find its update in conflict
// with itself.
func TestCommitRefusedAfterAnUnansweredTryMayHaveBeenMade(t *testing.T) {
	ep := etcdtest.Start(t)
	var (
		armed atomic.Bool
		b     *Backend
	)
	lose := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err != nil || method != "/etcdserverpb.KV/Txn" || !armed.CompareAndSwap(true, false) {
			return err
		}
		// etcd took the try; another control plane is elected before
		// its answer, which is lost, comes back.
		if _, err := b.cli.Delete(ctx, b.lead.Load().election.Key()); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "transport is closing")
	}
	b, lead := leader(t, ep, func(o *Options) {
		o.dialOptions = []grpc.DialOption{grpc.WithChainUnaryInterceptor(lose)}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	armed.Store(true)
	_, err := lead.Create(ctx, configMap("maybe", "1"))
	if err == nil || errors.Is(err, store.ErrNotLeader) {
		t.Fatalf("a commit refused after a try whose answer was lost: %v, want an error that is not store.ErrNotLeader", err)
	}
	follower := newStore(t, open(t, ep, nil))
	if _, err := follower.Get(cmKind, "default", "maybe"); err != nil {
		t.Fatalf("the try etcd took is not in the store: %v", err)
	}
}

// A leader that resigns hands over at once: the standby is elected long
// before the lease would have run out, and the old leader's commits are
// refused as not the leader's, never half made.
func TestResignHandsOverAtOnce(t *testing.T) {
	ep := etcdtest.Start(t)
	first, lead := leader(t, ep, func(o *Options) { o.LeaseTTL = time.Minute })
	standby := newStore(t, open(t, ep, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	led := make(chan error, 1)
	go func() { led <- standby.Lead(ctx, "https://second.test") }()
	candidateLease(ctx, t, first, "https://second.test")
	first.Resign()
	if err := <-led; err != nil {
		t.Fatalf("the standby, with the leader's lease a minute long: %v", err)
	}
	if _, err := lead.Create(ctx, configMap("after", "1")); !errors.Is(err, store.ErrNotLeader) {
		t.Fatalf("a write to the leader that resigned: %v, want store.ErrNotLeader", err)
	}
	if _, err := standby.Create(ctx, configMap("after", "1")); err != nil {
		t.Fatal(err)
	}
}
