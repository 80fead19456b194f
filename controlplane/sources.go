package controlplane

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/health"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/plan"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/apply"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/reconcile/notify"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/source/dir"
	"github.com/berth-dev/berth/source/git"
	"github.com/berth-dev/berth/source/helmrepo"
	sourcehttp "github.com/berth-dev/berth/source/http"
	"github.com/berth-dev/berth/store"
)

// SourcesDir is the folder of the data dir where git sources keep their
// clones, one folder per source.
const SourcesDir = "sources"

// SourceControllerName is the Source controller's row in the controller
// table and the name it logs under.
const SourceControllerName = "sources"

// DriftControllerName is the drift controller's row.
const DriftControllerName = "drift"

// Retry bounds of a Source whose sync failed (a fetch, a store write):
// the first retry after sourceRetryInitial, doubling up to
// source.RetryMax.
const sourceRetryInitial = time.Second

// dependencyRecheck is how soon a Source held back by its dependencies
// looks again, besides the wake-up their changes give it.
const dependencyRecheck = 5 * time.Second

var sourceKind = api.KindOf(&api.Source{})

// sources is the Source controller: each Source object is fetched,
// applied and checked on the shared controller runtime, one key per
// Source; the --source flags only make Source objects at start
// (bootstrap). The drift controller reverts changes made outside the
// sources.
type sources struct {
	store   *store.Store
	applier *apply.Applier
	clock   clock.WithTicker
	log     *slog.Logger
	dataDir string
	// sched is the scheduler's profile, for the plans of spec.gate.
	sched sched.FrameworkOptions
	// flags are the --source flags by name: the Source objects the server
	// keeps in step with its command line.
	flags map[string]source.Spec
	// syncDuration is berth_source_sync_duration_seconds: how long one
	// revision's apply took.
	syncDuration *prometheus.HistogramVec

	mu   sync.Mutex
	runs map[string]*sourceRun
	rand *rand.Rand
	// ctrl is the controller, once built.
	ctrl *reconcile.Controller
	// notify sends what the syncs do to the Alerts that ask, beside the
	// syncs: Publish never waits.
	notify *notify.Dispatcher
}

// sourceRun is what the controller keeps of one Source between syncs.
// Only the worker that holds the Source's key touches fetcher, have,
// spec and due; the rest is read by other goroutines under sources.mu.
type sourceRun struct {
	spec    api.SourceSpec
	fetcher source.Fetcher
	// have is the ID of the last revision read whole and handed to the
	// applier, so that a poll that finds it again skips decoding.
	have string
	// due is when the next poll is.
	due time.Time

	// hinted asks the next sync to read the source before its poll is
	// due (a dir source's watch saw a change).
	hinted bool
	// forced asks the next sync to read and apply the whole revision even
	// if unchanged (a webhook, a Trigger).
	forced bool
	// synced is set once a sync has ended, applied or not.
	synced bool
	// lastSuccess is when a revision was last applied (Ready=True).
	lastSuccess time.Time

	// waiting is the revision applied whose objects are not healthy yet
	// (spec.wait), until deadline; applied is that revision whole.
	waiting  string
	deadline time.Time
	applied  *source.Revision
	// healthy is the last revision whose objects all became healthy,
	// whole: what spec.rollbackOnFailure applies again.
	healthy *source.Revision
	// buildDigest identifies the key and values the fetcher was made
	// with (buildDigest).
	buildDigest string
}

// newSources checks the --source flags; a bad one stops the server before
// it serves.
func newSources(specs []source.Spec, st *store.Store, dataDir string, clk clock.WithTicker, log *slog.Logger, events *event.Recorder) (*sources, error) {
	s := &sources{
		store:   st,
		notify:  notify.New(st, notify.Options{Clock: clk, Logger: log}),
		clock:   clk,
		log:     log,
		dataDir: dataDir,
		flags:   map[string]source.Spec{},
		runs:    map[string]*sourceRun{},
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth", Subsystem: "source", Name: "sync_duration_seconds",
			Help:    "How long a source's sync took: validating a revision, diffing it against the store and writing it (Flux's gotk_reconcile_duration_seconds).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 17),
		}, []string{"name"}),
	}
	s.applier = apply.New(st, apply.Options{Clock: clk, Logger: log, Events: events, OnDrift: s.drifted})
	seed := uint64(clk.Now().UnixNano())
	s.rand = rand.New(rand.NewPCG(seed, seed>>1^0x9e3779b97f4a7c15))
	if err := source.CheckNames(specs); err != nil {
		return nil, err
	}
	for _, spec := range specs {
		// Make the source once, so that a bad option fails the start.
		f, err := s.newFetcher(spec, nil)
		if err != nil {
			return nil, err
		}
		f.Close()
		s.flags[spec.Name] = spec
	}
	return s, nil
}

// newFetcher makes the fetcher of one spec by its type; onChange is told
// of a change a dir source's watch saw.
func (s *sources) newFetcher(spec source.Spec, onChange func()) (source.Fetcher, error) {
	switch spec.Type {
	case source.TypeDir:
		return dir.New(spec, dir.Options{Clock: s.clock, Logger: s.log, OnChange: onChange})
	case source.TypeGit:
		return git.New(spec, git.Options{Clock: s.clock, Logger: s.log, CacheDir: filepath.Join(s.dataDir, SourcesDir, spec.Name)})
	case source.TypeHTTP:
		return sourcehttp.New(spec, sourcehttp.Options{Clock: s.clock, Logger: s.log})
	case source.TypeHelm:
		return helmrepo.New(spec, helmrepo.Options{Logger: s.log})
	}
	return nil, fmt.Errorf("source %q: unknown type %q", spec.Name, spec.Type)
}

// gate plans a revision of the Source key and, when the plan does not
// fit, returns it with the plan's findings as errors: the applier then
// rejects it as it rejects an invalid revision, names them in the
// Source's status and events, and keeps the revision applied before.
// timeout bounds the plan (DefaultPlanTimeout when nil).
func (s *sources) gate(ctx context.Context, key string, rev source.Revision, timeout *metav1.Duration) (source.Revision, error) {
	d := DefaultPlanTimeout
	if timeout != nil && timeout.Duration > 0 {
		d = timeout.Duration
	}
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	rep, err := plan.Run(pctx, s.store, rev.Objects, rev.Errors, plan.Options{Source: key, Revision: rev.ID, Clock: s.clock, Scheduler: s.sched})
	if err != nil {
		return rev, fmt.Errorf("plan revision %s of source %s: %w", rev.ID, key, err)
	}
	if rep.Fits {
		return rev, nil
	}
	for _, f := range rep.Failures() {
		rev.Errors = append(rev.Errors, &api.Error{File: "plan", Doc: -1, Message: "spec.gate: plan: " + f})
	}
	return rev, nil
}

// fetcherIn is a fetcher of spec that keeps a git clone in dir, for a
// read apart from the Source's own fetcher (a plan at another ref).
func (s *sources) fetcherIn(spec source.Spec, dir string) (source.Fetcher, error) {
	if spec.Type == source.TypeGit {
		return git.New(spec, git.Options{Clock: s.clock, Logger: s.log, CacheDir: dir})
	}
	return s.newFetcher(spec, nil)
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

// fetchSpec is the source.Spec of a Source object: what its fetcher reads.
func (s *sources) fetchSpec(ctx context.Context, name string, spec api.SourceSpec) (source.Spec, error) {
	return FetchSpec(ctx, name, spec, func(_ context.Context, kind, ns, name string) (map[string][]byte, error) {
		if kind == "ConfigMap" {
			obj, err := s.store.Get(api.KindOf(&api.ConfigMap{}), ns, name)
			if err != nil {
				return nil, err
			}
			return ConfigMapData(obj.(*api.ConfigMap)), nil
		}
		obj, err := s.store.Get(api.KindOf(&api.Secret{}), ns, name)
		if err != nil {
			return nil, err
		}
		return obj.(*api.Secret).Data, nil
	})
}

// ConfigMapData is a ConfigMap's data and binaryData as one map.
func ConfigMapData(cm *api.ConfigMap) map[string][]byte {
	out := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.BinaryData {
		out[k] = v
	}
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	return out
}

// FetchSpec is the source.Spec of a Source object's spec: what a fetcher
// reads, with the type's default interval. get reads the Secrets and
// ConfigMaps the spec names. The age identities of spec.decryption and
// the values of spec.helm.valuesFrom are read now, into memory; an error
// names the object.
func FetchSpec(ctx context.Context, name string, spec api.SourceSpec, get ObjectData) (source.Spec, error) {
	secret := func(ctx context.Context, ns, name string) (map[string][]byte, error) {
		return get(ctx, "Secret", ns, name)
	}
	out := source.Spec{
		Name:    name,
		Type:    string(spec.Type),
		URL:     strings.TrimPrefix(spec.URL, "git+"),
		Ref:     spec.Ref,
		Path:    spec.Path,
		Options: maps.Clone(spec.Options),
	}
	if spec.Interval != nil {
		out.Interval = spec.Interval.Duration
	}
	if out.Interval <= 0 {
		switch out.Type {
		case source.TypeGit:
			out.Interval = source.DefaultGitInterval
		case source.TypeHTTP:
			out.Interval = source.DefaultHTTPInterval
		default:
			out.Interval = source.DefaultDirInterval
		}
	}
	if ref := spec.SecretRef; ref != nil {
		ns := cmp.Or(ref.Namespace, api.NamespaceSystem)
		name := ref.Name
		out.Credentials = func(ctx context.Context) (map[string][]byte, error) {
			data, err := secret(ctx, ns, name)
			if err != nil {
				return nil, fmt.Errorf("credentials Secret %s/%s (spec.secretRef): %w", ns, name, err)
			}
			return data, nil
		}
	}
	if d := spec.Decryption; d != nil {
		ns := cmp.Or(d.SecretRef.Namespace, api.NamespaceSystem)
		data, err := secret(ctx, ns, d.SecretRef.Name)
		if err != nil {
			return out, fmt.Errorf("decryption Secret %s/%s (spec.decryption.secretRef): %w", ns, d.SecretRef.Name, err)
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			out.Build.AgeKey = append(append(out.Build.AgeKey, data[k]...), '\n')
		}
	}
	if h := spec.Helm; h != nil {
		if err := helmBuild(ctx, &out, h, get); err != nil {
			return out, err
		}
	}
	return out, nil
}

// NewFetcher makes the fetcher of a spec by its type, for one who reads
// a source outside the controller (`berth diff source`); cacheDir is
// where a git source keeps its clone.
func NewFetcher(spec source.Spec, cacheDir string, log *slog.Logger) (source.Fetcher, error) {
	switch spec.Type {
	case source.TypeDir:
		return dir.New(spec, dir.Options{Logger: log})
	case source.TypeGit:
		return git.New(spec, git.Options{Logger: log, CacheDir: cacheDir})
	case source.TypeHTTP:
		return sourcehttp.New(spec, sourcehttp.Options{Logger: log})
	case source.TypeHelm:
		return helmrepo.New(spec, helmrepo.Options{Logger: log})
	}
	return nil, fmt.Errorf("source %q: unknown type %q", spec.Name, spec.Type)
}

// ensureObjects makes the Source objects of the flags: one per flag,
// created or with the flag's part of its spec updated (the rest of the
// spec and the status kept). A Source a flag made that no flag names any
// more is kept, with its objects, and marked Ready=False NotConfigured by
// its sync, since pruning what a source applied because a flag went
// missing would be a surprise nobody asked for.
func (s *sources) ensureObjects(ctx context.Context) error {
	for _, name := range slices.Sorted(maps.Keys(s.flags)) {
		if err := s.ensureObject(ctx, s.flags[name]); err != nil {
			return err
		}
	}
	objs, _, err := s.store.List(sourceKind, store.Filter{})
	if err != nil {
		return err
	}
	for _, obj := range objs {
		src := obj.(*api.Source)
		if src.Annotations[api.AnnotationBootstrap] == "" || s.flagged(src.Name) {
			continue
		}
		if err := s.setCondition(ctx, src, metav1.ConditionFalse, api.ReasonNotConfigured, notConfigured); err != nil {
			return err
		}
		s.log.Warn("source no longer configured; its objects are kept", "source", src.Name)
	}
	return nil
}

// notConfigured is the Ready message of a Source a flag made that no flag
// names any more.
const notConfigured = "No --source flag of the server names this source any more: its objects are kept as they are and no longer synced; delete this Source to forget it: they keep running, and another source that declares them takes them over"

// ensureObject creates the Source object of a flag, or updates the flag's
// part of its spec.
func (s *sources) ensureObject(ctx context.Context, spec source.Spec) error {
	flag := objectSpec(spec)
	obj, err := s.store.Get(sourceKind, "", spec.Name)
	switch {
	case store.IsNotFound(err):
		src := &api.Source{ObjectMeta: metav1.ObjectMeta{Name: spec.Name,
			Annotations: map[string]string{api.AnnotationBootstrap: "flag"}}, Spec: flag}
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
	want := withFlag(src.Spec, flag)
	if equality.Semantic.DeepEqual(src.Spec, want) && src.Annotations[api.AnnotationBootstrap] != "" {
		return nil
	}
	src = src.DeepCopy()
	src.Spec = want
	if src.Annotations == nil {
		src.Annotations = map[string]string{}
	}
	src.Annotations[api.AnnotationBootstrap] = "flag"
	if _, err := s.store.Update(ctx, src); err != nil {
		return fmt.Errorf("update source %s: %w", spec.Name, err)
	}
	return nil
}

// withFlag is spec with the part a --source flag says (where to read,
// how often, with which options) taken from the flag.
func withFlag(spec, flag api.SourceSpec) api.SourceSpec {
	spec.Type, spec.URL, spec.Ref, spec.Path = flag.Type, flag.URL, flag.Ref, flag.Path
	spec.Interval, spec.Options, spec.AllowMassPrune = flag.Interval, flag.Options, flag.AllowMassPrune
	return spec
}

// Ready is the "sources" check of /readyz: every source of a flag has
// finished one sync attempt, applied or not.
func (s *sources) Ready() error {
	following := s.store.Following()
	var waiting []string
	for name := range s.flags {
		if following {
			// The leader runs the sources: a Source it has synced once
			// has a sync time.
			if obj, err := s.store.Get(sourceKind, "", name); err == nil && obj.(*api.Source).Status.LastSyncTime != nil {
				continue
			}
		} else {
			s.mu.Lock()
			r := s.runs[name]
			synced := r != nil && r.synced
			s.mu.Unlock()
			if synced {
				continue
			}
		}
		waiting = append(waiting, name)
	}
	if len(waiting) == 0 {
		return nil
	}
	slices.Sort(waiting)
	return fmt.Errorf("waiting for the first sync of %s", strings.Join(waiting, ", "))
}

// Trigger asks the named Source to fetch and apply now, even if nothing
// changed; false when no Source has that name.
func (s *sources) Trigger(name string) bool {
	if _, err := s.store.Get(sourceKind, "", name); err != nil {
		return false
	}
	s.mu.Lock()
	s.run(name).forced = true
	ctrl := s.ctrl
	s.mu.Unlock()
	if ctrl != nil {
		ctrl.Enqueue(name)
	}
	return true
}

// run returns the state of a Source, made at first use. s.mu is held.
func (s *sources) run(name string) *sourceRun {
	r := s.runs[name]
	if r == nil {
		r = &sourceRun{}
		s.runs[name] = r
	}
	return r
}

// lastSuccesses is when each Source last applied a revision, for the
// metrics.
func (s *sources) lastSuccesses() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]time.Time{}
	for name, r := range s.runs {
		if !r.lastSuccess.IsZero() {
			out[name] = r.lastSuccess
		}
	}
	return out
}

// controller builds the Source controller: a key per Source, woken by
// changes to Sources (its own, and those it depends on), by webhooks, by
// a dir source's watch, and at each Source's interval.
func (s *sources) controller(d Deps) *reconcile.Controller {
	opts := reconcile.Options{
		Clock:     d.Clock,
		Logger:    d.Log,
		Informers: d.Informers,
		Store:     s.store,
		Backoff:   reconcile.Backoff{Base: sourceRetryInitial, RandomizationFactor: 0.1, Max: source.RetryMax},
		Watches: []reconcile.Watch{{Kind: sourceKind, Keys: func(e store.Event) []string {
			name := e.Object.GetName()
			keys := []string{name}
			// The Sources that wait for this one look again.
			objs, _, err := s.store.List(sourceKind, store.Filter{})
			if err == nil {
				for _, o := range objs {
					if slices.Contains(o.(*api.Source).Spec.DependsOn, name) {
						keys = append(keys, o.GetName())
					}
				}
			}
			return keys
		}}},
	}
	c := reconcile.NewController(SourceControllerName, reconcile.ReconcilerFunc(s.reconcile), opts)
	s.mu.Lock()
	s.ctrl = c
	s.mu.Unlock()
	return c
}

// driftController reverts changes made outside the sources to what they
// applied: it watches every object a source's annotation names.
func (s *sources) driftController(d Deps) *reconcile.Controller {
	return s.applier.DriftController(reconcile.Options{Clock: d.Clock, Logger: d.Log, Informers: d.Informers})
}

// reconcile syncs one Source: it checks whether the Source may sync
// (configured, not suspended, its dependencies Ready), fetches when the
// poll is due or something asked, applies what changed, and comes back
// at the interval. Any error (a fetch, a store write) is retried with
// back-off, seconds at first.
func (s *sources) reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	obj, err := s.store.Get(sourceKind, "", key)
	if store.IsNotFound(err) {
		if spec, ok := s.flags[key]; ok {
			// Deleted while a flag names it: made again, and synced whole
			// so that its status says what is applied.
			if err := s.ensureObject(ctx, spec); err != nil {
				return reconcile.Result{}, err
			}
			s.mu.Lock()
			s.run(key).forced = true
			s.mu.Unlock()
			return reconcile.Result{}, nil
		}
		s.forget(key)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	src := obj.(*api.Source)
	s.mu.Lock()
	r := s.run(key)
	forced, hinted := r.forced, r.hinted
	r.forced, r.hinted = false, false
	s.mu.Unlock()
	now := s.clock.Now()

	if src.Annotations[api.AnnotationBootstrap] != "" && !s.flagged(key) {
		s.closeFetcher(r)
		return reconcile.Result{}, s.setCondition(ctx, src, metav1.ConditionFalse, api.ReasonNotConfigured, notConfigured)
	}
	if src.Spec.Suspend {
		s.closeFetcher(r)
		return reconcile.Result{}, s.setCondition(ctx, src, metav1.ConditionFalse, api.ReasonSuspended,
			"Suspended (spec.suspend): nothing is fetched or applied until `berth resume source "+key+"`")
	}
	if cycle := dependencyCycle(s.store, key); cycle != "" {
		return reconcile.Result{}, s.setCondition(ctx, src, metav1.ConditionFalse, api.ReasonCycle,
			"spec.dependsOn makes a cycle: "+cycle+"; nothing is synced until it is broken")
	}
	if waiting := s.dependenciesNotReady(src); waiting != "" {
		if err := s.setCondition(ctx, src, metav1.ConditionFalse, api.ReasonDependencyNotReady, waiting); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: dependencyRecheck}, nil
	}

	spec, err := s.fetchSpec(ctx, key, src.Spec)
	if err != nil {
		if serr := s.setCondition(ctx, src, metav1.ConditionFalse, api.ReasonFetchFailed, err.Error()); serr != nil {
			return reconcile.Result{}, serr
		}
		return reconcile.Result{}, err
	}
	if digest := buildDigest(spec); r.fetcher == nil || !equality.Semantic.DeepEqual(r.spec, src.Spec) || digest != r.buildDigest {
		s.closeFetcher(r)
		f, err := s.newFetcher(spec, func() { s.hint(key) })
		if err != nil {
			return reconcile.Result{}, reconcile.Terminal(s.setCondition(ctx, src, metav1.ConditionFalse, api.ReasonFetchFailed, err.Error()))
		}
		r.fetcher, r.spec, r.have, r.due, r.buildDigest = f, *src.Spec.DeepCopy(), "", time.Time{}, digest
	}
	request := src.Annotations[api.AnnotationReconcileRequestedAt]
	if request == src.Status.LastHandledReconcileAt {
		request = ""
	}
	whole := forced || request != "" || src.Generation != src.Status.ObservedGeneration || src.Status.LastSyncTime == nil
	if !whole && !hinted && !r.due.IsZero() && now.Before(r.due) {
		if r.waiting != "" {
			return s.checkHealth(ctx, src, r)
		}
		// Woken by a write (its own status), not due: nothing to do.
		return reconcile.Result{RequeueAfter: r.due.Sub(now)}, nil
	}
	have := r.have
	if whole {
		have = ""
	}
	rev := r.fetcher.Fetch(ctx, have)
	if ctx.Err() != nil {
		return reconcile.Result{}, ctx.Err()
	}
	rev.Time = s.clock.Now()
	if rev.OK() && have != "" && rev.ID == have {
		// Unchanged since the last sync.
		r.due = now.Add(s.jittered(spec.Interval))
		return reconcile.Result{RequeueAfter: r.due.Sub(now)}, nil
	}
	if src.Spec.Gate == api.SourceGatePlan && rev.OK() {
		if rev, err = s.gate(ctx, key, rev, src.Spec.Timeout); err != nil {
			r.have = ""
			return reconcile.Result{}, err
		}
	}
	res, err := s.applier.Apply(ctx, key, rev, apply.ApplyOptions{Request: request, Wait: src.Spec.Wait})
	end := s.clock.Now()
	if err == nil {
		s.notifySync(src, &res, end)
	}
	s.syncDuration.WithLabelValues(key).Observe(end.Sub(now).Seconds())
	s.mu.Lock()
	r.synced = true
	if res.Ready {
		r.lastSuccess = end
	}
	s.mu.Unlock()
	if err != nil {
		// The store failed: the request stays pending, the whole revision
		// is read again at the retry.
		r.have = ""
		s.mu.Lock()
		r.forced = true
		s.mu.Unlock()
		return reconcile.Result{}, err
	}
	if rev.Err != nil {
		r.have = ""
		return reconcile.Result{}, fmt.Errorf("fetch source %s: %w", key, rev.Err)
	}
	r.have = rev.ID
	r.due = now.Add(s.jittered(spec.Interval))
	if res.Ready && rev.Chart != nil {
		if err := s.recordHelm(ctx, key, func(h []api.SourceHelmRelease) []api.SourceHelmRelease {
			return helmHistory(h, rev.Chart, rev.ID, metav1.NewTime(end))
		}); err != nil {
			return reconcile.Result{}, err
		}
	}
	if res.Ready && src.Spec.Wait {
		timeout := api.DefaultSourceTimeout
		if t := src.Spec.Timeout; t != nil {
			timeout = t.Duration
		}
		r.waiting, r.deadline, r.applied = rev.ID, end.Add(timeout), &rev
		return s.checkHealth(ctx, src, r)
	}
	if res.Ready {
		r.waiting, r.healthy = "", &rev
	}
	return reconcile.Result{RequeueAfter: r.due.Sub(now)}, nil
}

// healthRecheck is how often the health of what a Source applied is
// looked at while it waits for it.
const healthRecheck = 2 * time.Second

// maxUnhealthyNamed bounds the objects a Ready message names.
const maxUnhealthyNamed = 10

// checkHealth looks at the kstatus of the objects of the revision r
// waits for: all healthy is Ready=True; some not, before the deadline,
// is Ready=Unknown, looked at again shortly; past the deadline, or one
// failed for good, is Ready=False naming them, and with
// spec.rollbackOnFailure the last healthy revision is applied again.
func (s *sources) checkHealth(ctx context.Context, src *api.Source, r *sourceRun) (reconcile.Result, error) {
	name, rev := src.Name, r.waiting
	objs, err := s.applier.Inventory(name)
	if err != nil {
		return reconcile.Result{}, err
	}
	report := health.Check(objs)
	now := s.clock.Now()
	next := reconcile.Result{RequeueAfter: max(r.due.Sub(now), time.Millisecond)}
	var unhealthy []string
	for _, e := range report.Unhealthy {
		unhealthy = append(unhealthy, e.String())
	}
	switch {
	case report.Healthy():
		r.waiting, r.healthy, r.applied = "", r.applied, nil
		msg := fmt.Sprintf("Applied revision %s: %d objects healthy", rev, report.Total)
		if err := s.applier.SetOutcome(ctx, name, apply.Outcome{
			Status: metav1.ConditionTrue, Reason: api.ReasonSucceeded, Message: msg,
			Health: api.SourceHealthy, Unhealthy: []string{}, HealthyRevision: rev, Revision: rev,
		}); err != nil {
			return next, err
		}
		s.notify.Publish(notify.SourceEvent(src, api.AlertEventHealthy, rev, api.ReasonSucceeded, msg, now))
		return next, nil
	case now.Before(r.deadline) && !report.Failed():
		err := s.applier.SetOutcome(ctx, name, apply.Outcome{
			Status: metav1.ConditionUnknown, Reason: api.ReasonProgressing,
			Message: fmt.Sprintf("Applied revision %s; waiting for %d of %d objects to become healthy: %s",
				rev, len(report.Unhealthy), report.Total, report.Summary(maxUnhealthyNamed)),
			Health: api.SourceProgressing, Unhealthy: unhealthy,
		})
		return reconcile.Result{RequeueAfter: min(healthRecheck, r.deadline.Sub(now))}, err
	}
	why := "within " + api.DefaultSourceTimeout.String()
	if timeout := src.Spec.Timeout; timeout != nil {
		why = "within " + timeout.Duration.String()
	}
	if report.Failed() {
		why = "and one failed"
	}
	msg := fmt.Sprintf("Revision %s applied, but %d of %d objects did not become healthy %s: %s",
		rev, len(report.Unhealthy), report.Total, why, report.Summary(maxUnhealthyNamed))
	if r.applied != nil && r.applied.Chart != nil {
		digest := r.applied.Chart.Digest
		if err := s.recordHelm(ctx, name, func(h []api.SourceHelmRelease) []api.SourceHelmRelease { return helmFailed(h, digest) }); err != nil {
			return reconcile.Result{}, err
		}
	}
	r.waiting, r.applied = "", nil
	out := apply.Outcome{Status: metav1.ConditionFalse, Reason: api.ReasonHealthCheckFailed, Message: msg,
		Health: api.SourceDegraded, Unhealthy: unhealthy, Revision: rev}
	if src.Spec.RollbackOnFailure {
		if r.healthy == nil {
			r.healthy, out.Message = s.pastHealthy(ctx, src, r, rev, out.Message)
		}
		switch {
		case r.healthy == nil:
		case r.healthy.ID == rev:
			out.Message += "; it is the last healthy revision: nothing to roll back to"
		default:
			res, err := s.applier.Apply(ctx, name, *r.healthy, apply.ApplyOptions{})
			if err != nil {
				r.waiting = rev // the rollback is tried again
				return reconcile.Result{}, err
			}
			if !res.Ready {
				out.Message += fmt.Sprintf("; rolling back to revision %s failed: %s", r.healthy.ID, res.Message)
			} else {
				out.Reason = api.ReasonRolledBack
				if c := r.healthy.Chart; c != nil {
					id := r.healthy.ID
					if err := s.recordHelm(ctx, name, func(h []api.SourceHelmRelease) []api.SourceHelmRelease {
						return helmHistory(h, c, id, metav1.NewTime(s.clock.Now()))
					}); err != nil {
						return reconcile.Result{}, err
					}
				}
				out.Message += fmt.Sprintf("; rolled back to revision %s (spec.rollbackOnFailure), which stays until a new revision comes", r.healthy.ID)
			}
		}
	}
	if err := s.applier.SetOutcome(ctx, name, out); err != nil {
		return next, err
	}
	s.notify.Publish(notify.SourceEvent(src, api.AlertEventFailed, rev, out.Reason, out.Message, now))
	return next, nil
}

// notifySync publishes the outcome of an apply of src: a revision
// applied (pending when a health check follows) or a sync that failed,
// when it is news, as the Source's events are (a poll that ends as the
// one before sends nothing).
func (s *sources) notifySync(src *api.Source, res *apply.Result, at time.Time) {
	_, reason, msg, ok := apply.SyncEvent(src, res)
	if !ok {
		return
	}
	typ := api.AlertEventFailed
	if res.Ready {
		typ = api.AlertEventApplied
	}
	ev := notify.SourceEvent(src, typ, res.Revision, cmp.Or(res.Reason, reason), msg, at)
	ev.Pending = res.Ready && src.Spec.Wait
	s.notify.Publish(ev)
}

// drifted publishes a drift correction of the drift controller.
func (s *sources) drifted(name string, key apply.Key, message string) {
	obj, err := s.store.Get(sourceKind, "", name)
	if err != nil {
		return
	}
	src := obj.(*api.Source)
	s.notify.Publish(notify.SourceEvent(src, api.AlertEventDriftCorrected, src.Status.LastAppliedRevision,
		apply.ReasonDriftCorrected, message, s.clock.Now()))
}

// pastHealthy reads status.lastHealthyRevision again when the server
// has not seen a healthy revision since it started (after a restart): a
// git source reads the commit again; other sources cannot read a past
// revision, and the message says so.
func (s *sources) pastHealthy(ctx context.Context, src *api.Source, r *sourceRun, failed, msg string) (*source.Revision, string) {
	id := src.Status.LastHealthyRevision
	if id == "" {
		return nil, msg + "; no healthy revision to roll back to yet"
	}
	if id == failed {
		return nil, msg + "; it is the last healthy revision: nothing to roll back to"
	}
	f, ok := r.fetcher.(source.RevisionFetcher)
	if !ok {
		return nil, msg + fmt.Sprintf("; the last healthy revision %s cannot be read again (only a git source reads a past revision) since the server started", id)
	}
	rev := f.FetchRevision(ctx, id)
	if !rev.OK() {
		reason := fmt.Sprint(rev.Err)
		if rev.Err == nil {
			reason = rev.Errors.Error()
		}
		return nil, msg + fmt.Sprintf("; the last healthy revision %s cannot be read again: %s", id, reason)
	}
	rev.Time = s.clock.Now()
	return &rev, msg
}

// recordHelm changes the history of a Source's Helm release.
func (s *sources) recordHelm(ctx context.Context, name string, change func([]api.SourceHelmRelease) []api.SourceHelmRelease) error {
	return s.applier.SetHelmHistory(ctx, name, change)
}

// flagged reports whether a --source flag names the Source.
func (s *sources) flagged(name string) bool {
	_, ok := s.flags[name]
	return ok
}

// hint asks for a read of a Source once a burst of changes its watch
// saw has had dir.DefaultDebounce to settle.
func (s *sources) hint(name string) {
	s.mu.Lock()
	s.run(name).hinted = true
	ctrl := s.ctrl
	s.mu.Unlock()
	if ctrl != nil {
		ctrl.EnqueueAfter(name, dir.DefaultDebounce)
	}
}

// jittered spreads an interval by up to ±5%, so that Sources made
// together do not poll together.
func (s *sources) jittered(d time.Duration) time.Duration {
	s.mu.Lock()
	f := 1 + git.Jitter*(2*s.rand.Float64()-1)
	s.mu.Unlock()
	return time.Duration(float64(d) * f)
}

// closeFetcher lets go of a Source's fetcher (its git cache, its watch).
func (s *sources) closeFetcher(r *sourceRun) {
	if r.fetcher != nil {
		r.fetcher.Close()
		r.fetcher, r.have = nil, ""
	}
}

// forget drops what the controller kept of a deleted Source.
func (s *sources) forget(name string) {
	s.mu.Lock()
	r := s.runs[name]
	delete(s.runs, name)
	s.mu.Unlock()
	if r != nil {
		s.closeFetcher(r)
	}
	s.applier.Forget(name)
}

// closeAll closes every fetcher once the controller has stopped.
func (s *sources) closeAll() {
	s.mu.Lock()
	runs := slices.Collect(maps.Values(s.runs))
	s.mu.Unlock()
	for _, r := range runs {
		s.closeFetcher(r)
	}
}

// setCondition writes the Ready condition of a Source that did not sync
// (suspended, waiting, not configured, unusable spec); nothing when it
// already says so.
func (s *sources) setCondition(ctx context.Context, src *api.Source, status metav1.ConditionStatus, reason, message string) error {
	c := meta.FindStatusCondition(src.Status.Conditions, api.SourceReady)
	if c != nil && c.Status == status && c.Reason == reason && c.Message == message && c.ObservedGeneration == src.Generation {
		return nil
	}
	return s.applier.SetReady(ctx, src.Name, status, reason, message)
}

// dependenciesNotReady says which Sources of spec.dependsOn are not Ready
// at their current revision; "" when all are.
func (s *sources) dependenciesNotReady(src *api.Source) string {
	var waiting []string
	for _, name := range src.Spec.DependsOn {
		obj, err := s.store.Get(sourceKind, "", name)
		if err != nil {
			waiting = append(waiting, name+" (no such Source)")
			continue
		}
		if why := notReadyAtRevision(obj.(*api.Source)); why != "" {
			waiting = append(waiting, name+" ("+why+")")
		}
	}
	if len(waiting) == 0 {
		return ""
	}
	return "Waiting for " + strings.Join(waiting, ", ") + " (spec.dependsOn)"
}

// notReadyAtRevision says why a Source is not Ready at the revision it
// last read; "" when it is.
func notReadyAtRevision(src *api.Source) string {
	c := meta.FindStatusCondition(src.Status.Conditions, api.SourceReady)
	switch {
	case c == nil || c.Status != metav1.ConditionTrue:
		if c == nil {
			return "not synced yet"
		}
		return "Ready=" + string(c.Status) + " " + c.Reason
	case c.ObservedGeneration != src.Generation:
		return "its spec changed since its last sync"
	case src.Status.LastAppliedRevision != src.Status.LastAttemptedRevision:
		return "not at its current revision"
	}
	return ""
}

// dependencyCycle returns the cycle of spec.dependsOn through the named
// Source, as "a -> b -> a", or "".
func dependencyCycle(r interface {
	Get(k *api.Kind, namespace, name string) (api.Object, error)
}, start string) string {
	deps := func(name string) []string {
		obj, err := r.Get(sourceKind, "", name)
		if err != nil {
			return nil
		}
		return obj.(*api.Source).Spec.DependsOn
	}
	return findCycle(start, deps)
}

// findCycle looks for a path from start back to start along next, depth
// first; it returns it as "start -> … -> start", or "".
func findCycle(start string, next func(string) []string) string {
	visited := map[string]bool{}
	var path []string
	var walk func(name string) bool
	walk = func(name string) bool {
		for _, n := range next(name) {
			if n == start {
				path = append(path, n)
				return true
			}
			if visited[n] {
				continue
			}
			visited[n] = true
			path = append(path, n)
			if walk(n) {
				return true
			}
			path = path[:len(path)-1]
		}
		return false
	}
	if walk(start) {
		return strings.Join(append([]string{start}, path...), " -> ")
	}
	return ""
}

// guard is the API's admission of Source objects: a spec.dependsOn that
// would close a cycle is refused, naming it. Anything else is the
// operator's to create, change and delete; a flag's part of the spec of
// a Source a flag made is put back at the next start.
func (s *sources) guard(_ context.Context, a auth.Attributes, id *auth.Identity) error {
	if a.Kind != sourceKind || a.Subresource != "" {
		return nil
	}
	switch a.Verb {
	case auth.VerbCreate, auth.VerbUpdate, auth.VerbPatch:
	default:
		return nil
	}
	src, ok := a.Object.(*api.Source)
	if !ok || len(src.Spec.DependsOn) == 0 {
		return nil
	}
	next := func(name string) []string {
		if name == src.Name {
			return src.Spec.DependsOn
		}
		obj, err := s.store.Get(sourceKind, "", name)
		if err != nil {
			return nil
		}
		return obj.(*api.Source).Spec.DependsOn
	}
	if cycle := findCycle(src.Name, next); cycle != "" {
		return auth.Forbidden(id, a, "spec.dependsOn would make a cycle: "+cycle)
	}
	return nil
}
