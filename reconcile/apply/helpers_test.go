package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// decode decodes manifests given as file name → YAML into a revision.
func decode(t testing.TB, id string, files ...string) source.Revision {
	t.Helper()
	if len(files)%2 != 0 {
		t.Fatal("decode wants name, content pairs")
	}
	rev := source.Revision{ID: id}
	for i := 0; i < len(files); i += 2 {
		objs, errs := api.DecodeStream(files[i], []byte(files[i+1]), api.DecodeOptions{DropStatus: true})
		rev.Objects = append(rev.Objects, objs...)
		rev.Errors = append(rev.Errors, errs...)
	}
	return rev
}

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  key: %q\n", name, value)
}

func namespace(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", name)
}

func service(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %s
spec:
  selector:
    app: %s
  ports:
  - port: 80
`, name, name)
}

func deployment(name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  labels:
    app: %s
spec:
  replicas: %d
  selector:
    matchLabels:
      app: %s
  template:
    metadata:
      labels:
        app: %s
    spec:
      containers:
      - name: web
        image: web:1
`, name, name, replicas, name, name)
}

func docs(d ...string) string { return strings.Join(d, "---\n") }

// recorder is a store backend that remembers the writes of every commit,
// so tests see exactly what a transaction wrote and in which order.
type recorder struct {
	store.Memory
	mu      sync.Mutex
	commits [][]store.Op
}

func (r *recorder) Commit(_ uint64, ops []store.Op) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits = append(r.commits, append([]store.Op(nil), ops...))
	return nil
}

// since returns the writes of objects committed after the first n
// commits, as "Kind/ns/name" (deletes prefixed with "-"). Events are left
// out: the tests of the Source's events read them.
func (r *recorder) since(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ops := range r.commits[n:] {
		for _, op := range ops {
			if op.Kind == eventKind {
				continue
			}
			s := Key{Kind: op.Kind, Namespace: op.Namespace, Name: op.Name}.String()
			if op.Object == nil {
				s = "-" + s
			}
			out = append(out, s)
		}
	}
	return out
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.commits)
}

// fixture is an applier over a real store with a source "fleet".
type fixture struct {
	t       testing.TB
	ctx     context.Context
	clock   *clocktesting.FakeClock
	backend *recorder
	store   *store.Store
	applier *Applier
}

const fleet = "fleet"

// newFixture's store runs the admission hooks admit, as the control
// plane's does.
func newFixture(t testing.TB, admit ...store.AdmitFunc) *fixture {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	rec := &recorder{}
	st, err := store.New(rec, store.Options{Clock: clk, Admit: admit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, ctx: context.Background(), clock: clk, backend: rec, store: st}
	f.applier = New(st, Options{Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	ns := &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: api.NamespaceDefault}}
	api.Default(ns)
	f.create(ns)
	f.create(&api.Source{ObjectMeta: metav1.ObjectMeta{Name: fleet}, Spec: api.SourceSpec{Type: api.SourceTypeGit, URL: "file:///repo"}})
	return f
}

func (f *fixture) create(obj api.Object) api.Object {
	f.t.Helper()
	out, err := f.store.Create(f.ctx, obj)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// apply applies a revision of fleet, a second later than the last.
func (f *fixture) apply(rev source.Revision) Result {
	f.t.Helper()
	f.clock.Step(time.Second)
	res, err := f.applier.Apply(f.ctx, fleet, rev, ApplyOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func (f *fixture) mustApply(rev source.Revision) Result {
	f.t.Helper()
	res := f.apply(rev)
	if !res.Ready {
		f.t.Fatalf("revision %s not applied: %s: %s", rev.ID, res.Reason, res.Message)
	}
	return res
}

func (f *fixture) get(kind, ns, name string) api.Object {
	f.t.Helper()
	k, ok := api.KindNamed(kind)
	if !ok {
		f.t.Fatalf("no kind %s", kind)
	}
	obj, err := f.store.Get(k, ns, name)
	if err != nil {
		f.t.Fatal(err)
	}
	return obj
}

func (f *fixture) exists(kind, ns, name string) bool {
	k, _ := api.KindNamed(kind)
	_, err := f.store.Get(k, ns, name)
	return err == nil
}

func (f *fixture) source() *api.Source {
	f.t.Helper()
	return f.get("Source", "", fleet).(*api.Source)
}

func (f *fixture) ready() metav1.Condition {
	f.t.Helper()
	for _, c := range f.source().Status.Conditions {
		if c.Type == api.SourceReady {
			return c
		}
	}
	f.t.Fatal("no Ready condition")
	return metav1.Condition{}
}

// versions maps every object the source applied to its resourceVersion.
func (f *fixture) versions() map[string]string {
	f.t.Helper()
	objs, err := inventory(f.store.Snapshot(), fleet)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range objs {
		out[KeyOf(o).String()] = o.GetResourceVersion()
	}
	return out
}

// events lists the events in a namespace with a reason.
func (f *fixture) events(ns, reason string) []*api.Event {
	objs, _, err := f.store.List(eventKind, store.Filter{Namespace: ns})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []*api.Event
	for _, o := range objs {
		if e := o.(*api.Event); e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// waitFor polls cond until it holds or 10s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, 10*time.Second, what, func() error {
		if !cond() {
			return errors.New("condition not met")
		}
		return nil
	})
}
