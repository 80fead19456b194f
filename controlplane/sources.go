package controlplane

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/apply"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/source/dir"
	"github.com/berth-dev/berth/source/git"
	sourcehttp "github.com/berth-dev/berth/source/http"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
)

// SourcesDir is the folder of the data dir where git sources keep their
// clones, one folder per source.
const SourcesDir = "sources"

var sourceKind = api.KindOf(&api.Source{})

// sources runs the configured sources: each one's revisions go to the
// applier one at a time; the Source objects are kept in step with the
// flags; requests made on them (`berth reconcile source`) and webhooks
// trigger syncs; and the drift controller reverts changes made outside
// them.
type sources struct {
	store   *store.Store
	applier *apply.Applier
	clock   clock.WithTicker
	log     *slog.Logger
	runners map[string]*runner
	// ctrlMetrics instruments the drift and Source controllers; nil
	// leaves them uninstrumented.
	ctrlMetrics *reconcile.Metrics
	// informers feed the drift and Source controllers; nil gives each
	// informers of its own.
	informers *informer.Factory
	// syncDuration is berth_source_sync_duration_seconds: how long one
	// revision's apply took.
	syncDuration *prometheus.HistogramVec
}

// runner is one configured source and its apply loop.
type runner struct {
	spec source.Spec
	src  source.Source
	// reapply asks the loop to apply the last revision again (the
	// Source's spec changed: allowMassPrune may now let it through).
	reapply chan struct{}

	mu sync.Mutex
	// requested is the newest reconcile request seen; pending is the one
	// the next revision answers.
	requested, pending string

	synced atomic.Bool
	// lastSuccess is when a revision was last applied (Ready=True), in
	// Unix nanoseconds; 0 until one has been since the server started.
	lastSuccess atomic.Int64
}

// sourceGuard is the API's admission of Source objects. A Source is made
// by a --source flag of the server, which alone runs it: one created
// through the API would sit there and never sync, so that is refused, as
// is a change to what the flag says (its type, URL, ref, path, interval
// and options; the next start would put the flag's back). Its
// allowMassPrune, the prune guard's switch, and its metadata (berth
// reconcile's request) are the operator's to change.
func sourceGuard(_ context.Context, a apiserver.Attributes, id *apiserver.Identity) error {
	if a.Kind != sourceKind || a.Subresource != "" {
		return nil
	}
	switch a.Verb {
	case apiserver.VerbCreate:
		return apiserver.Forbidden(id, a, "Source objects are made by the server's --source flags; one made through the API would never sync")
	case apiserver.VerbUpdate, apiserver.VerbPatch:
		old, cur := a.Old.(*api.Source).Spec, a.Object.(*api.Source).Spec
		old.AllowMassPrune = cur.AllowMassPrune
		if !equality.Semantic.DeepEqual(old, cur) {
			return apiserver.Forbidden(id, a, "the spec of a Source is its --source flag's (only spec.allowMassPrune may change): change the flag and restart the server")
		}
	}
	return nil
}

// newSources makes the source of every spec, so that a bad spec stops the
// server before it serves.
func newSources(specs []source.Spec, st *store.Store, dataDir string, clk clock.WithTicker, log *slog.Logger, events *event.Recorder) (*sources, error) {
	s := &sources{
		store:   st,
		applier: apply.New(st, apply.Options{Clock: clk, Logger: log, Events: events}),
		clock:   clk,
		log:     log,
		runners: map[string]*runner{},
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth", Subsystem: "source", Name: "sync_duration_seconds",
			Help:    "How long a source's sync took: validating a revision, diffing it against the store and writing it (Flux's gotk_reconcile_duration_seconds).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 17),
		}, []string{"name"}),
	}
	if err := source.CheckNames(specs); err != nil {
		return nil, err
	}
	for _, spec := range specs {
		src, err := newSource(spec, dataDir, clk, log)
		if err != nil {
			return nil, err
		}
		s.runners[spec.Name] = &runner{spec: spec, src: src, reapply: make(chan struct{}, 1)}
	}
	return s, nil
}

// newSource makes the source of one spec by its type.
func newSource(spec source.Spec, dataDir string, clk clock.WithTicker, log *slog.Logger) (source.Source, error) {
	switch spec.Type {
	case source.TypeDir:
		return dir.New(spec, dir.Options{Clock: clk, Logger: log})
	case source.TypeGit:
		return git.New(spec, git.Options{Clock: clk, Logger: log, CacheDir: filepath.Join(dataDir, SourcesDir, spec.Name)})
	case source.TypeHTTP:
		return sourcehttp.New(spec, sourcehttp.Options{Clock: clk, Logger: log})
	}
	return nil, fmt.Errorf("source %q: unknown type %q", spec.Name, spec.Type)
}

// objectSpec is the Source object's spec for a --source flag.
func objectSpec(spec source.Spec) api.SourceSpec {
	out := api.SourceSpec{
		Type: api.SourceType(spec.Type),
		URL:  spec.URL,
		Ref:  spec.Ref,
		Path: spec.Path,
	}
	if spec.Interval > 0 {
		out.Interval = &metav1.Duration{Duration: spec.Interval}
	}
	for k, v := range spec.Options {
		if k == source.OptionAllowMassPrune {
			out.AllowMassPrune = v == "true"
			continue
		}
		if out.Options == nil {
			out.Options = map[string]string{}
		}
		out.Options[k] = v
	}
	return out
}

// ensureObjects makes the Source objects match the flags: one per
// configured source, created or with its spec updated (status kept); one
// no flag names any more is kept, with its objects, and marked Ready=False
// NotConfigured, since pruning what a source applied because a flag went
// missing would be a surprise nobody asked for. Deleting such a Source
// prunes nothing either: its objects keep running, and its claim on them
// no longer holds another source back (the applier adopts them).
func (s *sources) ensureObjects(ctx context.Context) error {
	for _, name := range slices.Sorted(maps.Keys(s.runners)) {
		if err := s.ensureObject(ctx, s.runners[name].spec); err != nil {
			return err
		}
	}
	objs, _, err := s.store.List(sourceKind, store.Filter{})
	if err != nil {
		return err
	}
	now := metav1.NewTime(s.clock.Now())
	for _, obj := range objs {
		if _, ok := s.runners[obj.GetName()]; ok {
			continue
		}
		src := obj.(*api.Source).DeepCopy()
		changed := meta.SetStatusCondition(&src.Status.Conditions, metav1.Condition{
			Type:               api.SourceReady,
			Status:             metav1.ConditionFalse,
			Reason:             api.ReasonNotConfigured,
			Message:            "No --source flag of the server names this source any more: its objects are kept as they are and no longer synced; delete this Source to forget it: they keep running, and another source that declares them takes them over",
			ObservedGeneration: src.Generation,
			LastTransitionTime: now,
		})
		if !changed {
			continue
		}
		if _, err := s.store.Update(ctx, src); err != nil {
			return fmt.Errorf("mark source %s not configured: %w", src.Name, err)
		}
		s.log.Warn("source no longer configured; its objects are kept", "source", src.Name)
	}
	return nil
}

// ensureObject creates the Source object of a spec, or updates its spec.
func (s *sources) ensureObject(ctx context.Context, spec source.Spec) error {
	want := objectSpec(spec)
	obj, err := s.store.Get(sourceKind, "", spec.Name)
	switch {
	case store.IsNotFound(err):
		src := &api.Source{ObjectMeta: metav1.ObjectMeta{Name: spec.Name}, Spec: want}
		meta.SetStatusCondition(&src.Status.Conditions, metav1.Condition{
			Type:               api.SourceReady,
			Status:             metav1.ConditionUnknown,
			Reason:             api.ReasonProgressing,
			Message:            "Waiting for the first revision",
			LastTransitionTime: metav1.NewTime(s.clock.Now()),
		})
		if _, err := s.store.Create(ctx, src); err != nil && !store.IsAlreadyExists(err) {
			return fmt.Errorf("create source %s: %w", spec.Name, err)
		}
		return nil
	case err != nil:
		return err
	}
	src := obj.(*api.Source)
	if equality.Semantic.DeepEqual(src.Spec, want) {
		return nil
	}
	src = src.DeepCopy()
	src.Spec = want
	if _, err := s.store.Update(ctx, src); err != nil {
		return fmt.Errorf("update source %s: %w", spec.Name, err)
	}
	return nil
}

// Ready is the "sources" check of /readyz: every source has finished one
// sync attempt, applied or not.
func (s *sources) Ready() error {
	following := s.store.Following()
	var waiting []string
	for name, r := range s.runners {
		if following {
			// The leader runs the sources: a Source it has synced once
			// has a sync time.
			if obj, err := s.store.Get(sourceKind, "", name); err == nil && obj.(*api.Source).Status.LastSyncTime != nil {
				continue
			}
		} else if r.synced.Load() {
			continue
		}
		waiting = append(waiting, name)
	}
	if len(waiting) == 0 {
		return nil
	}
	slices.Sort(waiting)
	return fmt.Errorf("waiting for the first sync of %s", strings.Join(waiting, ", "))
}

// Trigger asks the named source to sync now; false when no source has
// that name.
func (s *sources) Trigger(name string) bool {
	r, ok := s.runners[name]
	if ok {
		r.src.Trigger()
	}
	return ok
}

// Run runs every source, its apply loop, the watch of Source objects and
// the drift controller until ctx is done, and waits for them all.
func (s *sources) Run(ctx context.Context) {
	if len(s.runners) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, r := range s.runners {
		revs := make(chan source.Revision)
		wg.Go(func() {
			err := r.src.Run(ctx, revs)
			if err == nil || ctx.Err() != nil {
				return
			}
			// The source cannot run at all (its cache folder is unusable):
			// say so on the Source, as a fetch that failed.
			s.log.Error("source stopped", "source", r.spec.Name, "err", err)
			select {
			case revs <- source.Revision{Err: fmt.Errorf("the source stopped: %w", err), Time: s.clock.Now()}:
			case <-ctx.Done():
			}
		})
		wg.Go(func() { s.loop(ctx, r, revs) })
	}
	names := slices.Sorted(maps.Keys(s.runners))
	opts := reconcile.Options{Clock: s.clock, Logger: s.log, Informers: s.informers}
	drift := s.applier.DriftController(names, opts)
	opts.Store = s.store
	opts.Watches = []reconcile.Watch{{Kind: sourceKind}}
	watch := reconcile.NewController("sources", reconcile.ReconcilerFunc(s.reconcile), opts)
	if s.ctrlMetrics != nil {
		s.ctrlMetrics.Instrument(drift)
		s.ctrlMetrics.Instrument(watch)
	}
	wg.Go(func() { drift.Run(ctx, 2) })
	wg.Go(func() { watch.Run(ctx, 1) })
	wg.Wait()
}

// loop applies a source's revisions one at a time.
func (s *sources) loop(ctx context.Context, r *runner, revs <-chan source.Revision) {
	var last *source.Revision
	for {
		var rev source.Revision
		select {
		case <-ctx.Done():
			return
		case rev = <-revs:
			last = &rev
		case <-r.reapply:
			if last == nil {
				continue
			}
			rev = *last
		}
		opts := apply.ApplyOptions{Request: r.takeRequest()}
		start := s.clock.Now()
		res, err := s.applier.Apply(ctx, r.spec.Name, rev, opts)
		end := s.clock.Now()
		s.syncDuration.WithLabelValues(r.spec.Name).Observe(end.Sub(start).Seconds())
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Error("apply failed", "source", r.spec.Name, "revision", rev.ID, "err", err)
			// The store failed; a later revision or trigger tries again.
			// The request stays pending so that `berth reconcile` learns.
			r.putBack(opts.Request)
			continue
		}
		if res.Ready {
			r.lastSuccess.Store(end.UnixNano())
		}
		r.synced.Store(true)
	}
}

// reconcile follows a Source object: it recreates it if it was deleted
// while configured (and applies the last revision again to fill in its
// status), triggers a sync for a new reconcile request, and applies the
// last revision again when the spec changed.
func (s *sources) reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	r := s.runners[key]
	if r == nil {
		return reconcile.Result{}, nil
	}
	obj, err := s.store.Get(sourceKind, "", key)
	if store.IsNotFound(err) {
		if err := s.ensureObject(ctx, r.spec); err != nil {
			return reconcile.Result{}, err
		}
		// The new object knows nothing yet, and the source sends a
		// revision only when it changes: apply the last one again so
		// that the status says what is applied.
		r.askReapply()
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	src := obj.(*api.Source)
	if at := src.Annotations[api.AnnotationReconcileRequestedAt]; at != "" && at != src.Status.LastHandledReconcileAt && r.request(at) {
		s.log.Info("sync requested", "source", key, "requestedAt", at)
		r.src.Trigger()
	}
	if src.Generation != src.Status.ObservedGeneration && src.Status.LastSyncTime != nil {
		r.askReapply()
	}
	return reconcile.Result{}, nil
}

// askReapply asks the apply loop to apply the last revision again; one
// request waiting is enough.
func (r *runner) askReapply() {
	select {
	case r.reapply <- struct{}{}:
	default:
	}
}

// request records a reconcile request; false when it was already seen.
func (r *runner) request(at string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at == r.requested {
		return false
	}
	r.requested, r.pending = at, at
	return true
}

// takeRequest returns the request the next sync answers, if any.
func (r *runner) takeRequest() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.pending
	r.pending = ""
	return at
}

func (r *runner) putBack(at string) {
	if at == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == "" {
		r.pending = at
	}
}
