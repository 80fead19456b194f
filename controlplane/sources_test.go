package controlplane

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// running is a control plane started by a test.
type running struct {
	*Server
	stop func()
	// done is closed once Run has returned.
	done chan struct{}
}

func startControlPlane(t *testing.T, dataDir, storeKind string, specs ...source.Spec) *running {
	t.Helper()
	return runControlPlane(t, Config{
		DataDir: dataDir,
		Listen:  "127.0.0.1:0",
		Store:   storeKind,
		Sources: specs,
		Logger:  slog.New(slog.DiscardHandler),
	})
}

// runControlPlane makes a control plane of cfg and runs it until the test
// ends or stop.
func runControlPlane(t *testing.T, cfg Config) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	r := &running{Server: s, done: make(chan struct{})}
	wg.Go(func() {
		defer close(r.done)
		if err := s.Run(ctx); err != nil {
			t.Errorf("run: %v", err)
		}
	})
	var once sync.Once
	r.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(r.stop)
	return r
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func cm(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  key: %q\n", name, value)
}

// poll calls cond until it returns nil or 20s pass.
func poll(t *testing.T, what string, cond func() error) {
	t.Helper()
	testtool.WaitFor(t, 20*time.Second, what, cond)
}

func sourceObject(t *testing.T, st *store.Store, name string) *api.Source {
	t.Helper()
	obj, err := st.Get(sourceKind, "", name)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*api.Source)
}

func readyOf(src *api.Source) (string, string) {
	c := meta.FindStatusCondition(src.Status.Conditions, api.SourceReady)
	if c == nil {
		return "", ""
	}
	return string(c.Status), c.Reason
}

func configData(st *store.Store, name string) (string, error) {
	obj, err := st.Get(api.KindOf(&api.ConfigMap{}), "default", name)
	if err != nil {
		return "", err
	}
	return obj.(*api.ConfigMap).Data["key"], nil
}

func TestDirSourceLifecycle(t *testing.T) {
	manifests := t.TempDir()
	write(t, filepath.Join(manifests, "a.yaml"), cm("a", "1"))
	write(t, filepath.Join(manifests, "sub", "b.yaml"), cm("b", "1"))
	spec, err := source.Parse("name=site," + manifests)
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	cp := startControlPlane(t, dataDir, StoreBolt, spec)
	st := cp.Store()

	poll(t, "the first sync", func() error {
		if s, r := readyOf(sourceObject(t, st, "site")); s != "True" {
			return fmt.Errorf("ready %s %s", s, r)
		}
		return cp.sources.Ready()
	})
	src := sourceObject(t, st, "site")
	if src.Spec.Type != api.SourceTypeDir || src.Spec.URL != manifests || src.Status.Objects != 2 || src.Status.LastAppliedRevision == "" {
		t.Errorf("source %+v", src)
	}

	// An edited file is applied.
	write(t, filepath.Join(manifests, "a.yaml"), cm("a", "2"))
	poll(t, "the edit", func() error {
		if v, err := configData(st, "a"); err != nil || v != "2" {
			return fmt.Errorf("a = %q, %v", v, err)
		}
		return nil
	})

	// A reconcile request is answered.
	at := time.Now().UTC().Format(time.RFC3339Nano)
	src = sourceObject(t, st, "site").DeepCopy()
	src.Annotations = map[string]string{api.AnnotationReconcileRequestedAt: at}
	if _, err := st.Update(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	poll(t, "the reconcile request", func() error {
		if got := sourceObject(t, st, "site").Status.LastHandledReconcileAt; got != at {
			return fmt.Errorf("lastHandledReconcileAt %q", got)
		}
		return nil
	})

	// A Source deleted while its flag names it comes back, and says again
	// what is applied: the folder has not changed, so no new revision
	// will come to say it.
	applied := sourceObject(t, st, "site").Status.LastAppliedRevision
	if _, err := st.Delete(context.Background(), sourceKind, "", "site", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the deleted source back and ready", func() error {
		src, err := st.Get(sourceKind, "", "site")
		if err != nil {
			return err
		}
		if s, r := readyOf(src.(*api.Source)); s != "True" {
			return fmt.Errorf("ready %s %s", s, r)
		}
		if got := src.(*api.Source).Status.LastAppliedRevision; got != applied {
			return fmt.Errorf("lastAppliedRevision %q, want %q", got, applied)
		}
		return nil
	})

	// Emptying the folder is held back by the prune guard until the spec
	// allows it.
	os.RemoveAll(filepath.Join(manifests, "sub"))
	os.Remove(filepath.Join(manifests, "a.yaml"))
	poll(t, "the prune guard", func() error {
		if s, r := readyOf(sourceObject(t, st, "site")); r != api.ReasonPruneGuard {
			return fmt.Errorf("ready %s %s", s, r)
		}
		return nil
	})
	if _, err := configData(st, "a"); err != nil {
		t.Fatal("pruned despite the guard")
	}
	src = sourceObject(t, st, "site").DeepCopy()
	src.Spec.AllowMassPrune = true
	if _, err := st.Update(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	poll(t, "the prune", func() error {
		if _, err := configData(st, "a"); !store.IsNotFound(err) {
			return fmt.Errorf("a still there: %v", err)
		}
		return nil
	})
	write(t, filepath.Join(manifests, "c.yaml"), cm("c", "1"))
	poll(t, "c", func() error { _, err := configData(st, "c"); return err })
	cp.stop()

	// Restarted without the flag: the Source says so, its objects stay.
	cp = startControlPlane(t, dataDir, StoreBolt)
	src = sourceObject(t, cp.Store(), "site")
	if s, r := readyOf(src); s != "False" || r != api.ReasonNotConfigured {
		t.Errorf("ready %s %s", s, r)
	}
	if _, err := configData(cp.Store(), "c"); err != nil {
		t.Errorf("c was not kept: %v", err)
	}
	if err := cp.sources.Ready(); err != nil {
		t.Errorf("no sources, yet not ready: %v", err)
	}
}

func TestSourcesRejectDuplicateNames(t *testing.T) {
	a, _ := source.Parse("name=x," + t.TempDir())
	b, _ := source.Parse("name=x," + t.TempDir())
	_, err := New(context.Background(), Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Store: StoreMemory, Sources: []source.Spec{a, b}, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		t.Fatal("two sources named x were accepted")
	}
}

// TestSourcesThroughTheAPI: a Source made through the API syncs like one
// of a flag; its spec can change (the new place is applied, the old
// objects pruned); a dependsOn cycle is refused; deleting it keeps its
// objects.
func TestSourcesThroughTheAPI(t *testing.T) {
	manifests, first, second := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(manifests, "a.yaml"), cm("a", "1"))
	write(t, filepath.Join(first, "b.yaml"), cm("b", "1"))
	write(t, filepath.Join(second, "c.yaml"), cm("c", "1"))
	write(t, filepath.Join(second, "d.yaml"), cm("d", "1"))
	spec, err := source.Parse("name=site," + manifests)
	if err != nil {
		t.Fatal(err)
	}
	cp := startControlPlane(t, t.TempDir(), StoreMemory, spec)
	creds := cp.Credentials()
	c, err := client.New(&client.Config{Server: "https://" + cp.Addr().String(), Token: creds.AdminToken, CAData: creds.CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := cp.Store()
	poll(t, "the first sync", func() error { return cp.sources.Ready() })

	other := &api.Source{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: api.SourceSpec{Type: api.SourceTypeDir, URL: first}}
	if _, err := c.Create(ctx, other); err != nil {
		t.Fatalf("create a Source: %v", err)
	}
	poll(t, "b applied by other", func() error { _, err := configData(st, "b"); return err })

	// Moved to another folder: its objects follow.
	update := func(name string, change func(*api.Source)) error {
		obj, err := c.Get(ctx, sourceKind, "", name)
		if err != nil {
			return err
		}
		src := obj.DeepCopyObject().(*api.Source)
		change(src)
		_, err = c.Update(ctx, src)
		return err
	}
	retry := func(name string, change func(*api.Source)) {
		t.Helper()
		poll(t, "update "+name, func() error { return update(name, change) })
	}
	retry("other", func(s *api.Source) { s.Spec.URL = second; s.Spec.AllowMassPrune = true })
	poll(t, "other moved", func() error {
		if _, err := configData(st, "b"); !store.IsNotFound(err) {
			return fmt.Errorf("b: %v", err)
		}
		_, err := configData(st, "c")
		return err
	})

	// other waits for site; site waiting for other would be a cycle.
	retry("other", func(s *api.Source) { s.Spec.DependsOn = []string{"site"} })
	err = update("site", func(s *api.Source) { s.Spec.DependsOn = []string{"other"} })
	if !client.IsForbidden(err) || !strings.Contains(err.Error(), "site -> other -> site") {
		t.Errorf("a dependsOn cycle: %v, want 403 naming it", err)
	}

	if _, err := c.Delete(ctx, sourceKind, "", "other", nil); err != nil {
		t.Fatal(err)
	}
	poll(t, "other gone", func() error {
		if _, err := st.Get(sourceKind, "", "other"); !store.IsNotFound(err) {
			return fmt.Errorf("other: %v", err)
		}
		return nil
	})
	if _, err := configData(st, "c"); err != nil {
		t.Errorf("c not kept: %v", err)
	}
}

// TestDeletedSourceReleasesItsClaim follows a fleet moved from one source
// to another across restarts on one bolt store: while the Source that
// applied the objects exists, another source declaring them is refused
// (and told how to hand them over); once that Source is deleted, its
// claim is stale and the other source adopts the objects as they are,
// without recreating them, and says so in an event.
func TestDeletedSourceReleasesItsClaim(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	for _, dir := range []string{first, second} {
		write(t, filepath.Join(dir, "a.yaml"), cm("a", "1"))
	}
	fleet, err := source.Parse("name=fleet," + first)
	if err != nil {
		t.Fatal(err)
	}
	other, err := source.Parse("name=other," + second)
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	ready := func(st *store.Store, name, status, reason string) func() error {
		return func() error {
			if s, r := readyOf(sourceObject(t, st, name)); s != status || r != reason {
				return fmt.Errorf("%s: ready %s %s", name, s, r)
			}
			return nil
		}
	}
	claim := func(st *store.Store) (string, types.UID) {
		obj, err := st.Get(api.KindOf(&api.ConfigMap{}), "default", "a")
		if err != nil {
			t.Fatal(err)
		}
		return obj.GetAnnotations()[api.AnnotationSource], obj.GetUID()
	}

	cp := startControlPlane(t, dataDir, StoreBolt, fleet)
	poll(t, "fleet applied", ready(cp.Store(), "fleet", "True", api.ReasonSucceeded))
	owner, uid := claim(cp.Store())
	if owner != "fleet" {
		t.Fatalf("a is claimed by %q", owner)
	}
	cp.stop()

	// Both configured: the second is refused, with the ways out.
	cp = startControlPlane(t, dataDir, StoreBolt, fleet, other)
	poll(t, "other refused", ready(cp.Store(), "other", "False", api.ReasonInvalidRevision))
	msg := meta.FindStatusCondition(sourceObject(t, cp.Store(), "other").Status.Conditions, api.SourceReady).Message
	for _, want := range []string{`ConfigMap/default/a exists and is owned by source "fleet"`, "kubectl annotate configmap a -n default berth.dev/source-"} {
		if !strings.Contains(msg, want) {
			t.Errorf("other's message %q does not say %q", msg, want)
		}
	}
	cp.stop()

	// fleet no longer configured, but its Source still there: still refused.
	cp = startControlPlane(t, dataDir, StoreBolt, other)
	poll(t, "other still refused", ready(cp.Store(), "other", "False", api.ReasonInvalidRevision))
	if _, err := cp.Store().Delete(context.Background(), sourceKind, "", "fleet", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cp.stop()

	// fleet deleted: other takes a over as it is.
	cp = startControlPlane(t, dataDir, StoreBolt, other)
	st := cp.Store()
	poll(t, "other applied", ready(st, "other", "True", api.ReasonSucceeded))
	if owner, now := claim(st); owner != "other" || now != uid {
		t.Errorf("a is claimed by %q with uid %s; want other, uid %s (not recreated)", owner, now, uid)
	}
	events, _, err := st.List(api.KindOf(&api.Event{}), store.Filter{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, obj := range events {
		if e := obj.(*api.Event); e.Reason == "Adopted" {
			said = append(said, e.Message)
		}
	}
	if want := "Source other adopted ConfigMap/default/a from source fleet, which no longer exists"; !slices.Contains(said, want) {
		t.Errorf("Adopted events %q, want %q", said, want)
	}
}

// TestAppOfApps: a source's folder declares two Sources, which sync their
// own folders; one that declares the Source managing it is refused with
// the chain named, and nothing of that revision is applied.
func TestAppOfApps(t *testing.T) {
	root, one, two := t.TempDir(), t.TempDir(), t.TempDir()
	child := func(name, dir string) string {
		return fmt.Sprintf("apiVersion: berth.dev/v1\nkind: Source\nmetadata:\n  name: %s\nspec:\n  type: dir\n  url: %s\n", name, dir)
	}
	write(t, filepath.Join(root, "one.yaml"), child("one", one))
	write(t, filepath.Join(root, "two.yaml"), child("two", two))
	write(t, filepath.Join(one, "a.yaml"), cm("a", "1"))
	write(t, filepath.Join(two, "b.yaml"), cm("b", "1"))
	spec, err := source.Parse("name=root," + root)
	if err != nil {
		t.Fatal(err)
	}
	cp := startControlPlane(t, t.TempDir(), StoreMemory, spec)
	st := cp.Store()
	poll(t, "a and b applied by the declared sources", func() error {
		for _, name := range []string{"a", "b"} {
			if _, err := configData(st, name); err != nil {
				return err
			}
		}
		return nil
	})
	if owner := sourceObject(t, st, "one").Annotations[api.AnnotationSource]; owner != "root" {
		t.Errorf("Source one is owned by %q, want root", owner)
	}

	// one declares root, which manages one: refused.
	write(t, filepath.Join(one, "root.yaml"), child("root", root))
	poll(t, "one refused", func() error {
		src := sourceObject(t, st, "one")
		if s, r := readyOf(src); s != "False" || r != api.ReasonInvalidRevision {
			return fmt.Errorf("ready %s %s", s, r)
		}
		msg := meta.FindStatusCondition(src.Status.Conditions, api.SourceReady).Message
		if !strings.Contains(msg, "root.yaml") || !strings.Contains(msg, "Source root manages source one (root -> one -> root)") {
			return fmt.Errorf("message %q", msg)
		}
		return nil
	})

	// Dropped from root's folder, two is pruned; its objects stay.
	if err := os.Remove(filepath.Join(root, "two.yaml")); err != nil {
		t.Fatal(err)
	}
	poll(t, "two pruned", func() error {
		if _, err := st.Get(sourceKind, "", "two"); !store.IsNotFound(err) {
			return fmt.Errorf("two: %v", err)
		}
		return nil
	})
	if _, err := configData(st, "b"); err != nil {
		t.Errorf("b not kept: %v", err)
	}
}
