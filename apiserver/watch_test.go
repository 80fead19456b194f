package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/testtool"
)

// next reads one event with a deadline.
func next(t *testing.T, w *client.Watcher) client.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := w.Next(ctx)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	return ev
}

func expectEvent(t *testing.T, w *client.Watcher, typ client.EventType, name string) client.Event {
	t.Helper()
	ev := next(t, w)
	if ev.Type != typ || ev.Object.GetName() != name {
		t.Fatalf("event %s %s, want %s %s", ev.Type, ev.Object.GetName(), typ, name)
	}
	return ev
}

func configMap(name string) *api.ConfigMap {
	return &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

func TestWatchFromRevision(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.mustCreate(configMap("a"))
	from := a.GetResourceVersion()
	a2 := a.DeepCopyObject().(*api.ConfigMap)
	a2.Data = map[string]string{"x": "1"}
	if _, err := e.client.Update(ctx, a2); err != nil {
		t.Fatal(err)
	}
	e.mustCreate(configMap("b"))
	if _, err := e.client.Delete(ctx, cmKind, "default", "a", nil); err != nil {
		t.Fatal(err)
	}
	w, err := e.client.Watch(ctx, cmKind, "default", client.WatchOptions{ResourceVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	last := 0
	for _, want := range []struct {
		typ  client.EventType
		name string
	}{{client.Modified, "a"}, {client.Added, "b"}, {client.Deleted, "a"}} {
		ev := expectEvent(t, w, want.typ, want.name)
		rv, _ := strconv.Atoi(ev.ResourceVersion())
		if rv <= last {
			t.Fatalf("revisions out of order: %d after %d", rv, last)
		}
		last = rv
	}
	e.mustCreate(configMap("c"))
	expectEvent(t, w, client.Added, "c")
}

func TestWatchSendsCurrentStateFirst(t *testing.T) {
	e := newEnv(t)
	e.mustCreate(configMap("a"))
	e.mustCreate(configMap("b"))
	for _, rv := range []string{"", "0"} {
		w, err := e.client.Watch(context.Background(), cmKind, "default", client.WatchOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatal(err)
		}
		expectEvent(t, w, client.Added, "a")
		expectEvent(t, w, client.Added, "b")
		w.Stop()
	}
	w, err := e.client.Watch(context.Background(), cmKind, "default", client.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expectEvent(t, w, client.Added, "a")
	expectEvent(t, w, client.Added, "b")
	e.mustCreate(configMap("c"))
	expectEvent(t, w, client.Added, "c")
}

func TestWatchSelectors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w, err := e.client.Watch(ctx, podKind, "", client.WatchOptions{
		ResourceVersion: strconv.FormatUint(e.store.Revision(), 10),
		ListOptions:     client.ListOptions{FieldSelector: "spec.nodeName=n1", LabelSelector: "app=web"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	e.mustCreate(testPod("default", "other-node", "n2", map[string]string{"app": "web"}))
	e.mustCreate(testPod("default", "other-app", "n1", map[string]string{"app": "db"}))
	e.mustCreate(testPod("default", "unbound", "", map[string]string{"app": "web"}))
	// Binding (a scheduler's write, through the store) brings it in.
	_, err = e.store.Txn(ctx, func(tx *storeTxn) error {
		obj, err := tx.Get(podKind, "default", "unbound")
		if err != nil {
			return err
		}
		p := obj.DeepCopyObject().(*api.Pod)
		p.Spec.NodeName = "n1"
		_, err = tx.Update(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, client.Added, "unbound")
	if _, err := e.client.Delete(ctx, podKind, "default", "other-app", nil); err != nil {
		t.Fatal(err)
	}
	e.mustCreate(testPod("default", "mine", "n1", map[string]string{"app": "web"}))
	expectEvent(t, w, client.Added, "mine")
}

func TestWatchBookmarks(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	e := newEnv(t, withClock(fc), withConfig(func(c *apiserver.Config) { c.BookmarkInterval = time.Minute }))
	w, err := e.client.Watch(context.Background(), cmKind, "default", client.WatchOptions{
		ResourceVersion: strconv.FormatUint(e.store.Revision(), 10),
		AllowBookmarks:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	eventually(t, "the watch's timers", fc.HasWaiters)
	e.mustCreate(configMap("a"))
	expectEvent(t, w, client.Added, "a")
	// A change elsewhere moves the store on; the bookmark says the watch
	// has seen everything up to it.
	e.mustCreate(testPod("default", "p", "", nil))
	rev := e.store.Revision()
	fc.Step(time.Minute)
	ev := next(t, w)
	if ev.Type != client.Bookmark || ev.ResourceVersion() != strconv.FormatUint(rev, 10) {
		t.Fatalf("got %s at %s, want a bookmark at %d", ev.Type, ev.ResourceVersion(), rev)
	}
}

func TestWatchCompactedRevisionIsGone(t *testing.T) {
	e := newEnv(t, withHistory(5))
	ctx := context.Background()
	first := e.mustCreate(configMap("a"))
	for i := range 20 {
		if _, err := e.client.Patch(ctx, cmKind, "default", "a", []byte(`{"data":{"i":"`+strconv.Itoa(i)+`"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := e.client.Watch(ctx, cmKind, "default", client.WatchOptions{ResourceVersion: first.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	_, err = w.Next(ctx)
	if !client.IsGone(err) {
		t.Fatalf("watch from a compacted revision: %v, want 410", err)
	}
}

func TestWatchFutureRevision(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Now())
	e := newEnv(t, withClock(fc))
	ctx := context.Background()
	type result struct {
		w   *client.Watcher
		err error
	}
	start := func(rv uint64) chan result {
		ch := make(chan result, 1)
		go func() {
			w, err := e.client.Watch(ctx, cmKind, "default", client.WatchOptions{ResourceVersion: strconv.FormatUint(rv, 10)})
			ch <- result{w, err}
		}()
		return ch
	}
	wait := func(ch chan result) result {
		var r result
		testtool.WaitFor(t, 10*time.Second, "the watch to answer", func() error {
			select {
			case r = <-ch:
				return nil
			default:
			}
			fc.Step(100 * time.Millisecond)
			return errors.New("no answer yet")
		})
		return r
	}

	// Far in the future: 504 after a wait, as Kubernetes answers.
	r := wait(start(e.store.Revision() + 1000))
	if r.err == nil || !client.IsTooLargeResourceVersion(r.err) || client.Code(r.err) != http.StatusGatewayTimeout {
		t.Fatalf("far future: %v", r.err)
	}

	// Just ahead: the watch waits for the store to get there.
	ch := start(e.store.Revision() + 1)
	eventually(t, "the watch to wait", fc.HasWaiters)
	e.mustCreate(configMap("a"))
	r = wait(ch)
	if r.err != nil {
		t.Fatalf("near future: %v", r.err)
	}
	defer r.w.Stop()
	e.mustCreate(configMap("b"))
	expectEvent(t, r.w, client.Added, "b")
}

func TestWatchTable(t *testing.T) {
	e := newEnv(t)
	e.mustCreate(testPod("default", "p1", "n1", nil))
	req, _ := http.NewRequest("GET", e.ts.URL+"/api/v1/namespaces/default/pods?watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	readTable := func() metav1.Table {
		if !sc.Scan() {
			t.Fatalf("stream ended: %v", sc.Err())
		}
		var ev struct {
			Type   string
			Object metav1.Table
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != "ADDED" || ev.Object.Kind != "Table" || len(ev.Object.Rows) != 1 {
			t.Fatalf("event %s", sc.Bytes())
		}
		return ev.Object
	}
	first := readTable()
	if len(first.ColumnDefinitions) == 0 || first.ColumnDefinitions[0].Name != "Name" || first.Rows[0].Cells[0] != "p1" {
		t.Fatalf("first table %+v", first)
	}
	e.mustCreate(testPod("default", "p2", "n1", nil))
	second := readTable()
	if len(second.ColumnDefinitions) != 0 || second.Rows[0].Cells[0] != "p2" {
		t.Fatalf("second table %+v", second)
	}
}

// A watch's rows are rendered as their events come: kubectl get -w
// prints each with the age it has then.
func TestWatchTableAges(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Now())
	e := newEnv(t, withClock(fc))
	e.mustCreate(testPod("default", "p1", "n1", nil))
	req, _ := http.NewRequest("GET", e.ts.URL+"/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=86400", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Accept", tableAccept)
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	var age int
	ageOf := func() any {
		var ev struct {
			Object metav1.Table
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		for i, c := range ev.Object.ColumnDefinitions {
			if c.Name == "Age" {
				age = i
			}
		}
		return ev.Object.Rows[0].Cells[age]
	}
	ageOf()                // ADDED, with the column definitions
	fc.Step(3 * time.Hour) // within the watch's timeoutSeconds
	p, err := e.client.Get(context.Background(), podKind, "default", "p1")
	if err != nil {
		t.Fatal(err)
	}
	p.SetLabels(map[string]string{"touched": "yes"})
	if _, err := e.client.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got := ageOf(); got != "3h" {
		t.Errorf("age in the MODIFIED event three hours on: %v, want 3h", got)
	}
}

func TestShutdownEndsWatches(t *testing.T) {
	e := newEnv(t)
	w, err := e.client.Watch(context.Background(), cmKind, "default", client.WatchOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.server.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(ctx); !errors.Is(err, client.ErrWatchClosed) {
		t.Fatalf("watch after shutdown: %v, want a clean end", err)
	}
	// New watches are refused while shutting down.
	_, err = e.client.Watch(ctx, cmKind, "default", client.WatchOptions{})
	if client.Code(err) != http.StatusServiceUnavailable {
		t.Fatalf("watch during shutdown: %v", err)
	}
}

func TestWatchTimeout(t *testing.T) {
	e := newEnv(t)
	w, err := e.client.Watch(context.Background(), cmKind, "default", client.WatchOptions{ResourceVersion: "1", TimeoutSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := w.Next(ctx); !errors.Is(err, client.ErrWatchClosed) {
		t.Fatalf("watch past its timeout: %v", err)
	}
}

// TestWatchEndsWhenTheStoreEndsIt: a watch the store ends (here by
// closing) ends its response at once, so the client watches again; it
// does not wait for the client to leave or for the watch's timeout.
func TestWatchEndsWhenTheStoreEndsIt(t *testing.T) {
	e := newEnv(t)
	w, err := e.client.Watch(context.Background(), cmKind, "default", client.WatchOptions{
		ResourceVersion: strconv.FormatUint(e.store.Revision(), 10),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	e.mustCreate(configMap("a"))
	expectEvent(t, w, client.Added, "a")
	e.store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		_, err := w.Next(ctx)
		if ctx.Err() != nil {
			t.Fatal("the watch was still open 5s after the store closed")
		}
		if err != nil {
			return
		}
	}
}
