package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// gate stands in front of the server to hold new watches, to end the
// ones in flight, cleanly or by breaking the stream, and to fail lists.
type gate struct {
	mu      sync.Mutex
	hold    chan struct{}
	held    int
	active  map[int]context.CancelFunc
	abort   bool
	nextID  int
	lists   int
	watches int
	// failLists is how many lists to come are answered 503.
	failLists int
	// endWatches, when set, ends every watch as soon as it opens: "break"
	// breaks the stream, "close" closes it cleanly, "error" and "gone"
	// send an ERROR event of 500 or 410.
	endWatches string
}

func newGate() *gate { return &gate{active: map[int]context.CancelFunc{}} }

func (g *gate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" {
			if r.Method == http.MethodGet {
				g.mu.Lock()
				g.lists++
				fail := g.failLists > 0
				if fail {
					g.failLists--
				}
				g.mu.Unlock()
				if fail {
					http.Error(w, "restarting", http.StatusServiceUnavailable)
					return
				}
			}
			h.ServeHTTP(w, r)
			return
		}
		g.mu.Lock()
		hold := g.hold
		if hold != nil {
			g.held++
		}
		g.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		g.mu.Lock()
		end := g.endWatches
		g.mu.Unlock()
		if end != "" {
			endWatch(w, end)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		g.mu.Lock()
		id := g.nextID
		g.nextID++
		g.active[id] = cancel
		g.watches++
		g.mu.Unlock()
		h.ServeHTTP(w, r.WithContext(ctx))
		g.mu.Lock()
		delete(g.active, id)
		abort := g.abort
		g.mu.Unlock()
		if abort {
			panic(http.ErrAbortHandler) // the stream breaks, no clean end
		}
	})
}

// endWatch opens a watch and ends it at once, as gate.endWatches says.
func endWatch(w http.ResponseWriter, how string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	code := map[string]int{"error": http.StatusInternalServerError, "gone": http.StatusGone}[how]
	switch how {
	case "break":
		panic(http.ErrAbortHandler)
	case "error", "gone":
		fmt.Fprintf(w, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d}}`+"\n", code)
	}
}

// cut ends the watches in flight; with abort their streams break.
func (g *gate) cut(abort bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.abort = abort
	for _, cancel := range g.active {
		cancel()
	}
}

func (g *gate) count(f func(g *gate) int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return f(g)
}

// recorder collects what an informer hands on.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) handle(e client.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, string(e.Type)+" "+e.Object.GetName())
}

func (r *recorder) has(want ...string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range want {
		if !slices.Contains(r.events, w) {
			return false
		}
	}
	return true
}

func names(objs []api.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName()+"@"+o.GetResourceVersion())
	}
	slices.Sort(out)
	return out
}

// runInformer starts an informer and stops it when the test ends.
func runInformer(t *testing.T, inf *client.Informer) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = inf.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if err := inf.WaitForSync(sctx); err != nil {
		t.Fatal(err)
	}
}

// TestInformerRelistsAfterGone: the informer's watch ends, the changes
// made before it watches again outrun the server's history, the watch is
// answered 410, and the informer lists again, telling of what vanished.
func TestInformerRelistsAfterGone(t *testing.T) {
	g := newGate()
	s := newServer(t, 5, g.wrap)
	c := s.client(t)
	ctx := context.Background()
	for _, n := range []string{"keep", "doomed"} {
		if _, err := c.Create(ctx, configMap(n)); err != nil {
			t.Fatal(err)
		}
	}
	rec := &recorder{}
	inf := client.NewInformer(c, cmKind, client.InformerOptions{Namespace: "default"}, rec.handle)
	runInformer(t, inf)
	if !rec.has("ADDED keep", "ADDED doomed") {
		t.Fatalf("first list: %v", rec.events)
	}
	eventually(t, "the informer's watch", func() bool { return g.count(func(g *gate) int { return len(g.active) }) == 1 })

	g.mu.Lock()
	hold := make(chan struct{})
	g.hold = hold
	g.mu.Unlock()
	g.cut(false)
	eventually(t, "the informer to watch again", func() bool { return g.count(func(g *gate) int { return g.held }) == 1 })

	if _, err := c.Delete(ctx, cmKind, "default", "doomed", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, configMap("new")); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := c.Patch(ctx, cmKind, "default", "keep", []byte(`{"data":{"i":"`+strconv.Itoa(i)+`"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	listsBefore := g.count(func(g *gate) int { return g.lists })
	g.mu.Lock()
	g.hold = nil
	g.mu.Unlock()
	close(hold)

	eventually(t, "the relist's events", func() bool { return rec.has("DELETED doomed", "ADDED new", "MODIFIED keep") })
	if g.count(func(g *gate) int { return g.lists }) <= listsBefore {
		t.Fatal("the informer did not list again")
	}
	want, _, err := c.List(ctx, cmKind, "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cache to match the server", func() bool { return slices.Equal(names(inf.List()), names(want)) })
	if _, ok := inf.Get("default", "doomed"); ok {
		t.Fatal("vanished object still cached")
	}
	// And it follows changes after.
	if _, err := c.Create(ctx, configMap("later")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a change after the relist", func() bool { return rec.has("ADDED later") })
}

// TestInformerRelistsAfterBrokenStream: a stream that breaks (not a clean
// end) makes the informer back off on its clock and list again.
func TestInformerRelistsAfterBrokenStream(t *testing.T) {
	g := newGate()
	s := newServer(t, 0, g.wrap)
	c := s.client(t)
	ctx := context.Background()
	if _, err := c.Create(ctx, configMap("a")); err != nil {
		t.Fatal(err)
	}
	fc := clocktesting.NewFakeClock(time.Now())
	rec := &recorder{}
	inf := client.NewInformer(c, cmKind, client.InformerOptions{Namespace: "default", Clock: fc, MinBackoff: time.Second, Logger: quiet}, rec.handle)
	runInformer(t, inf)
	eventually(t, "the informer's watch", func() bool { return g.count(func(g *gate) int { return len(g.active) }) == 1 })
	lists := g.count(func(g *gate) int { return g.lists })

	g.cut(true)
	// The informer waits out its back-off on the fake clock.
	eventually(t, "the back-off", fc.HasWaiters)
	g.mu.Lock()
	g.abort = false
	g.mu.Unlock()
	if _, err := c.Create(ctx, configMap("b")); err != nil {
		t.Fatal(err)
	}
	fc.Step(2 * time.Second)
	eventually(t, "the relist", func() bool { return g.count(func(g *gate) int { return g.lists }) > lists })
	eventually(t, "the new object", func() bool { return rec.has("ADDED b") })
}

// TestInformerBackoffEndsWithAList: after a server restart that took a
// few failed lists, the back-off has grown; the list that succeeds ends
// it, so when the server restarts again before any watch event, the
// informer lists again after the shortest wait, not the grown one.
func TestInformerBackoffEndsWithAList(t *testing.T) {
	g := newGate()
	s := newServer(t, 0, g.wrap)
	c := s.client(t)
	fc := clocktesting.NewFakeClock(time.Now())
	inf := client.NewInformer(c, cmKind, client.InformerOptions{Namespace: "default", Clock: fc, MinBackoff: time.Second, MaxBackoff: time.Minute, Logger: quiet}, nil)
	runInformer(t, inf)
	watching := func() bool { return g.count(func(g *gate) int { return len(g.active) }) == 1 }
	lists := func() int { return g.count(func(g *gate) int { return g.lists }) }
	eventually(t, "the informer's watch", watching)
	fc.Step(time.Minute) // the watch has lived MaxBackoff: the server is well

	// The first restart: the stream breaks and four lists fail, with
	// back-offs of 1, 2, 4, 8 and 16s; the next list succeeds.
	g.mu.Lock()
	g.failLists = 4
	g.mu.Unlock()
	g.cut(true)
	for n := lists(); n < 5+1; n = lists() {
		eventually(t, "a back-off", fc.HasWaiters)
		fc.Step(time.Minute)
		eventually(t, "a list", func() bool { return lists() > n })
	}
	eventually(t, "the informer's watch again", watching)
	g.mu.Lock()
	g.abort = false
	g.mu.Unlock()

	// The second restart: the shortest back-off (1s, up to 20% more).
	n := lists()
	g.cut(true)
	eventually(t, "the back-off", fc.HasWaiters)
	fc.Step(1200 * time.Millisecond)
	eventually(t, "a list after the shortest back-off", func() bool { return lists() > n })
}

// timerClock records the waits an informer asks of its clock.
type timerClock struct {
	*clocktesting.FakeClock
	mu    sync.Mutex
	waits []time.Duration
}

func (c *timerClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	return c.FakeClock.NewTimer(d)
}

func (c *timerClock) wait(n int) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n >= len(c.waits) {
		return 0, false
	}
	return c.waits[n], true
}

// TestInformerBackoffGrowsWhenWatchesEndAtOnce: a server (or a proxy)
// that lists but ends every watch as soon as it opens, however it ends
// it, is asked again after a back-off that doubles each time, not after
// the shortest wait once every list succeeds.
func TestInformerBackoffGrowsWhenWatchesEndAtOnce(t *testing.T) {
	for _, how := range []string{"break", "close", "error", "gone"} {
		t.Run(how, func(t *testing.T) {
			g := newGate()
			g.endWatches = how
			s := newServer(t, 0, g.wrap)
			c := s.client(t)
			fc := &timerClock{FakeClock: clocktesting.NewFakeClock(time.Now())}
			inf := client.NewInformer(c, cmKind, client.InformerOptions{Namespace: "default", Clock: fc, MinBackoff: time.Second, MaxBackoff: time.Minute, Logger: quiet}, nil)
			runInformer(t, inf)
			want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute}
			for n, least := range want {
				var d time.Duration
				eventually(t, fmt.Sprintf("back-off %d", n+1), func() bool {
					var ok bool
					d, ok = fc.wait(n)
					return ok && fc.HasWaiters()
				})
				// Up to 20% jitter above the back-off, never below.
				if d < least || d > least+least/5 {
					t.Fatalf("back-off %d is %s, want %s to %s", n+1, d, least, least+least/5)
				}
				fc.Step(d)
			}
		})
	}
}

// TestInformerFollowsChanges: events after the list, with Old set.
func TestInformerFollowsChanges(t *testing.T) {
	s := newServer(t, 0, nil)
	c := s.client(t)
	ctx := context.Background()
	var mu sync.Mutex
	var got []client.Event
	inf := client.NewInformer(c, cmKind, client.InformerOptions{Namespace: "default", ListOptions: client.ListOptions{LabelSelector: "app=web"}},
		func(e client.Event) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, e)
		})
	runInformer(t, inf)
	cm := configMap("a")
	cm.Labels = map[string]string{"app": "web"}
	if _, err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, configMap("unlabelled")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Patch(ctx, cmKind, "default", "a", []byte(`{"data":{"x":"1"}}`)); err != nil {
		t.Fatal(err)
	}
	// Losing the label takes it out of the selection: Deleted.
	if _, err := c.Patch(ctx, cmKind, "default", "a", []byte(`{"metadata":{"labels":null}}`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "three events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 3
	})
	mu.Lock()
	defer mu.Unlock()
	if got[0].Type != client.Added || got[1].Type != client.Modified || got[2].Type != client.Deleted {
		t.Fatalf("events %v %v %v", got[0].Type, got[1].Type, got[2].Type)
	}
	if got[1].Old == nil || got[1].Old.(*api.ConfigMap).Data["x"] != "" || got[1].Object.(*api.ConfigMap).Data["x"] != "1" {
		t.Fatalf("modified event old/new: %+v", got[1])
	}
	if len(inf.List()) != 0 {
		t.Fatalf("cache %v", names(inf.List()))
	}
}

var quiet = slog.New(slog.DiscardHandler)
