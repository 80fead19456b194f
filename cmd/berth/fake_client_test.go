package main

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// fakeAPI is an in-memory stand-in for the control plane, for the tests
// of the commands' argument handling and flow only: it keeps objects by
// kind, namespace and name, answers NotFound and Conflict as the API
// server does (*apierrors.StatusError), and records every write. The
// printers are tested on real objects without it.
type fakeAPI struct {
	mu      sync.Mutex
	objects map[string]api.Object
	rv      int
	calls   []string
	deletes []deleteOptions
	// watches are the events of each watch in turn; every watch but the
	// last ends as the server closing it, the last as the user pressing
	// Ctrl-C (cancel).
	watches [][]watchEvent
	cancel  context.CancelFunc
	// fail makes the named call ("create deployments web") fail with it;
	// failOnce makes only its next call fail.
	fail     map[string]error
	failOnce map[string]error
	// execs are the options of each PodExec.
	execs []podExecOptions
	// attaches are the options of each PodAttach.
	attaches []podStreamOptions
}

func newFakeAPI(objs ...api.Object) *fakeAPI {
	f := &fakeAPI{objects: map[string]api.Object{}, fail: map[string]error{}, failOnce: map[string]error{}}
	for _, o := range objs {
		f.put(o.DeepCopyObject().(api.Object))
	}
	return f
}

func fakeKey(k *api.Kind, ns, name string) string { return k.Resource + "/" + ns + "/" + name }

func (f *fakeAPI) put(o api.Object) {
	f.rv++
	o.SetResourceVersion(strconv.Itoa(f.rv))
	k := api.KindOf(o)
	o.GetObjectKind().SetGroupVersionKind(k.GVK)
	f.objects[fakeKey(k, o.GetNamespace(), o.GetName())] = o
}

func (f *fakeAPI) record(format string, args ...any) error {
	call := fmt.Sprintf(format, args...)
	f.calls = append(f.calls, call)
	if err, ok := f.failOnce[call]; ok {
		delete(f.failOnce, call)
		return err
	}
	return f.fail[call]
}

func (f *fakeAPI) get(k *api.Kind, ns, name string) (api.Object, error) {
	o, ok := f.objects[fakeKey(k, ns, name)]
	if !ok {
		return nil, apierrors.NewNotFound(k.GroupResource(), name)
	}
	return o.DeepCopyObject().(api.Object), nil
}

func (f *fakeAPI) Get(_ context.Context, k *api.Kind, ns, name string) (api.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("get %s %s/%s", k.Resource, ns, name); err != nil {
		return nil, err
	}
	return f.get(k, ns, name)
}

func (f *fakeAPI) List(_ context.Context, k *api.Kind, ns string, opts listOptions) ([]api.Object, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("list %s %s %s %s", k.Resource, ns, opts.LabelSelector, opts.FieldSelector); err != nil {
		return nil, "", err
	}
	ls, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, "", apierrors.NewBadRequest(err.Error())
	}
	fs, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return nil, "", apierrors.NewBadRequest(err.Error())
	}
	var keys []string
	for key := range f.objects {
		if strings.HasPrefix(key, k.Resource+"/") {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	var out []api.Object
	for _, key := range keys {
		o := f.objects[key]
		if ns != "" && o.GetNamespace() != ns {
			continue
		}
		set := fields.Set{"metadata.name": o.GetName(), "metadata.namespace": o.GetNamespace()}
		if p, ok := o.(*api.Pod); ok {
			set["spec.nodeName"] = p.Spec.NodeName
			set["status.phase"] = string(p.Status.Phase)
		}
		if !ls.Matches(labels.Set(o.GetLabels())) || !fs.Matches(set) {
			continue
		}
		out = append(out, o.DeepCopyObject().(api.Object))
	}
	return out, strconv.Itoa(f.rv), nil
}

func (f *fakeAPI) Watch(_ context.Context, k *api.Kind, ns string, opts listOptions) (watcher, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("watch %s %s %s from %s", k.Resource, ns, opts.FieldSelector, opts.ResourceVersion); err != nil {
		return nil, err
	}
	w := &fakeWatcher{cancel: f.cancel}
	if len(f.watches) > 0 {
		w.events, f.watches = f.watches[0], f.watches[1:]
		w.closed = len(f.watches) > 0
	}
	return w, nil
}

// fakeWatcher delivers its events, then ends as the server closing the
// watch (closed) or as the user interrupting the command (cancel).
type fakeWatcher struct {
	events []watchEvent
	closed bool
	cancel context.CancelFunc
}

func (w *fakeWatcher) Next(ctx context.Context) (watchEvent, error) {
	if len(w.events) > 0 {
		ev := w.events[0]
		w.events = w.events[1:]
		return ev, nil
	}
	if w.closed {
		return watchEvent{}, errWatchClosed
	}
	if w.cancel != nil {
		w.cancel()
	}
	<-ctx.Done()
	return watchEvent{}, ctx.Err()
}

func (w *fakeWatcher) Stop() {}

func (f *fakeAPI) Create(_ context.Context, k *api.Kind, ns string, obj api.Object) (api.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("create %s %s/%s", k.Resource, ns, obj.GetName()); err != nil {
		return nil, err
	}
	if _, ok := f.objects[fakeKey(k, ns, obj.GetName())]; ok {
		return nil, apierrors.NewAlreadyExists(k.GroupResource(), obj.GetName())
	}
	o := obj.DeepCopyObject().(api.Object)
	o.SetUID(types.UID("uid-" + ns + "-" + obj.GetName()))
	o.SetCreationTimestamp(metav1.NewTime(fixtureNow))
	f.put(o)
	return o.DeepCopyObject().(api.Object), nil
}

func (f *fakeAPI) Update(_ context.Context, k *api.Kind, ns string, obj api.Object) (api.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("update %s %s/%s", k.Resource, ns, obj.GetName()); err != nil {
		return nil, err
	}
	live, err := f.get(k, ns, obj.GetName())
	if err != nil {
		return nil, err
	}
	if live.GetResourceVersion() != obj.GetResourceVersion() {
		return nil, apierrors.NewConflict(k.GroupResource(), obj.GetName(), fmt.Errorf("the object has been modified"))
	}
	o := obj.DeepCopyObject().(api.Object)
	f.put(o)
	return o.DeepCopyObject().(api.Object), nil
}

func (f *fakeAPI) Patch(_ context.Context, k *api.Kind, ns, name string, _ []byte) (api.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("patch %s %s/%s", k.Resource, ns, name); err != nil {
		return nil, err
	}
	return f.get(k, ns, name)
}

func (f *fakeAPI) Delete(_ context.Context, k *api.Kind, ns, name string, opts deleteOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("delete %s %s/%s", k.Resource, ns, name); err != nil {
		return err
	}
	key := fakeKey(k, ns, name)
	if _, ok := f.objects[key]; !ok {
		return apierrors.NewNotFound(k.GroupResource(), name)
	}
	delete(f.objects, key)
	f.deletes = append(f.deletes, opts)
	return nil
}

// writes lists the calls that change something.
func (f *fakeAPI) writes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, "create ") || strings.HasPrefix(c, "update ") || strings.HasPrefix(c, "delete ") || strings.HasPrefix(c, "patch ") {
			out = append(out, c)
		}
	}
	return out
}

// PodExec records the exec's options and runs nothing; the command exits 0.
func (f *fakeAPI) PodExec(_ context.Context, ns, name string, opts podExecOptions) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execs = append(f.execs, opts)
	return 0, f.record("exec %s/%s", ns, name)
}

// PodAttach records the attach's options and carries nothing; the
// command exits 0.
func (f *fakeAPI) PodAttach(_ context.Context, ns, name string, opts podStreamOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attaches = append(f.attaches, opts)
	return f.record("attach %s/%s", ns, name)
}

// ResourceMetrics answers that nothing has been measured yet.
func (f *fakeAPI) ResourceMetrics(_ context.Context, path string, _ url.Values) ([]usageItem, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return nil, f.record("metrics %s", path)
}
