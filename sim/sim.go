package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/store"
)

// Options describe a simulation. Zero fields take the defaults of SPEC §9.
type Options struct {
	Nodes int
	Pods  int
	// NodeCPU and NodeMemory are each node's capacity (default 32 and
	// 128Gi); PodCPU and PodMemory each pod's requests (100m, 128Mi).
	NodeCPU, NodeMemory resource.Quantity
	PodCPU, PodMemory   resource.Quantity
	// ReplicaSets is how many owners the pods are spread over (default 1).
	ReplicaSets int
	// Mix gives the nodes labels and a taint and the ReplicaSets node
	// selectors, anti-affinity and tolerations (see mixPodSpec).
	Mix bool
	// Spread gives every fourth ReplicaSet (K modulo 4 = 0) a topology
	// spread constraint and a preferred pod anti-affinity term over its
	// own pods (see spreadPodSpec).
	Spread bool
	// Scenario is ScenarioPods (the default), ScenarioRollout,
	// ScenarioJob or ScenarioDaemonSet.
	Scenario string
	// Parallelism is the job scenario's Job's parallelism (default: Pods).
	Parallelism int
	// MostAllocated makes the scheduler pack pods onto the fullest nodes.
	MostAllocated bool
	// Store is the control plane's store (default "memory"): "memory",
	// "bolt", or an etcd's members, "etcd://h1:2379,…", reached in the
	// clear. Over etcd the run keeps its state under a prefix of its own,
	// deleted at its end.
	Store string
	// Timeout ends the run with what it has (default 10m).
	Timeout time.Duration
	// StartConcurrency bounds the agents joining and registering at once
	// (default 64).
	StartConcurrency int
	// Progress receives a line a second (and the agents' process's
	// stderr); nil: none. Run serialises its writes.
	Progress io.Writer
	// Logger is the control plane's; nil discards.
	Logger *slog.Logger
	// Clock drives heartbeats and the control plane; the real clock when
	// nil. Measurements always use the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Measuring, when set, is called as the measurement starts, once
	// every agent is ready: `berth sim --cpuprofile` starts there, so that
	// the profile shows the scheduling of the pods, not the agents joining.
	Measuring func()
	// AgentsCommand, when set, runs the hollow agents in a process of
	// their own rather than in this one: the command (`berth sim agents`)
	// with the flags of FleetOptions.Args and --exit-with-stdin. The
	// result then tells the control plane's CPU and memory from the
	// agents'.
	AgentsCommand []string
	// Measured, when set, is called once the measurement is over, while
	// the control plane and the agents still run: `berth sim --memprofile`
	// writes the heap profile there, at its fullest.
	Measured func()
}

// Result is the JSON line `berth sim` ends with. The rollout and job
// scenarios write only the fields they measure (see MarshalJSON).
type Result struct {
	Nodes           int     `json:"nodes"`
	Pods            int     `json:"pods"`
	Scheduled       int     `json:"scheduled"`
	Running         int     `json:"running"`
	ScheduleSeconds float64 `json:"schedule_seconds"`
	PodsPerSecond   float64 `json:"pods_per_second"`
	P50BindMs       float64 `json:"p50_bind_ms"`
	P99BindMs       float64 `json:"p99_bind_ms"`
	P99RunningMs    float64 `json:"p99_running_ms"`
	PeakRSSMB       float64 `json:"peak_rss_mb"`
	// BoundSeconds runs from the write of the ReplicaSets to the last
	// binding (ScheduleSeconds starts at the first pod instead).
	BoundSeconds float64 `json:"bound_seconds"`
	// CPUSeconds is the CPU time the whole process (control plane and
	// agents) spent over BoundSeconds, and CPUMsPerPod that over the pods
	// bound: unlike the rates, it does not move with other work on the
	// machine. They are always in the JSON line, as `berth sim --help`
	// shows it: a small run's CPU time rounds to 0, which is a value. (They
	// are 0 too when the agents' process gave no reading; the progress
	// says why.)
	CPUSeconds  float64 `json:"cpu_seconds"`
	CPUMsPerPod float64 `json:"cpu_ms_per_pod"`
	// With the agents in a process of their own (Options.AgentsCommand),
	// CPUSeconds and PeakRSSMB add up both processes, and these are the
	// control plane's process alone, over the same time as CPUSeconds:
	// what a control plane whose agents run on other machines spends.
	// PeakRSSMB is then the sum of two peaks that need not have come at
	// once: an upper bound of the whole run's.
	ControlPlaneCPUSeconds  float64 `json:"control_plane_cpu_seconds,omitempty"`
	ControlPlaneCPUMsPerPod float64 `json:"control_plane_cpu_ms_per_pod,omitempty"`
	ControlPlanePeakRSSMB   float64 `json:"control_plane_peak_rss_mb,omitempty"`

	// The rollout scenario: from the Deployment's creation to every
	// replica available, then from the new image to the rollout's end;
	// the least available pods at any revision during the rollout (over
	// how many revisions), the least status.availableReplicas sampled
	// every 10ms, and replicas − maxUnavailable, which neither may go
	// under.
	CreateSeconds         float64 `json:"create_seconds,omitempty"`
	RolloutSeconds        float64 `json:"rollout_seconds,omitempty"`
	MinAvailable          *int    `json:"min_available,omitempty"`
	MinStatusAvailable    *int    `json:"min_status_available,omitempty"`
	AvailabilityBound     int     `json:"availability_bound,omitempty"`
	AvailabilityRevisions int     `json:"availability_revisions,omitempty"`

	// The job scenario: from the Job's creation to its Complete
	// condition (Scheduled then counts its succeeded pods, and
	// PodsPerSecond them over this time).
	CompleteSeconds float64 `json:"complete_seconds,omitempty"`

	// scenario is the one that made the result, when not ScenarioPods
	// (or ScenarioDaemonSet): MarshalJSON writes what it measures.
	scenario string
}

// MarshalJSON writes the JSON line of the result's scenario: the fields
// it measures and no others, so that a rollout's line has no bind
// latencies of 0 ms it never took.
func (r Result) MarshalJSON() ([]byte, error) {
	switch r.scenario {
	case ScenarioRollout:
		return json.Marshal(struct {
			Nodes                 int     `json:"nodes"`
			Pods                  int     `json:"pods"`
			PeakRSSMB             float64 `json:"peak_rss_mb"`
			ControlPlanePeakRSSMB float64 `json:"control_plane_peak_rss_mb,omitempty"`
			CreateSeconds         float64 `json:"create_seconds,omitempty"`
			RolloutSeconds        float64 `json:"rollout_seconds,omitempty"`
			MinAvailable          *int    `json:"min_available,omitempty"`
			MinStatusAvailable    *int    `json:"min_status_available,omitempty"`
			AvailabilityBound     int     `json:"availability_bound,omitempty"`
			AvailabilityRevisions int     `json:"availability_revisions,omitempty"`
		}{r.Nodes, r.Pods, r.PeakRSSMB, r.ControlPlanePeakRSSMB, r.CreateSeconds, r.RolloutSeconds,
			r.MinAvailable, r.MinStatusAvailable, r.AvailabilityBound, r.AvailabilityRevisions})
	case ScenarioJob:
		return json.Marshal(struct {
			Nodes                 int     `json:"nodes"`
			Pods                  int     `json:"pods"`
			Scheduled             int     `json:"scheduled"`
			Running               int     `json:"running"`
			PodsPerSecond         float64 `json:"pods_per_second"`
			PeakRSSMB             float64 `json:"peak_rss_mb"`
			ControlPlanePeakRSSMB float64 `json:"control_plane_peak_rss_mb,omitempty"`
			CompleteSeconds       float64 `json:"complete_seconds,omitempty"`
		}{r.Nodes, r.Pods, r.Scheduled, r.Running, r.PodsPerSecond, r.PeakRSSMB, r.ControlPlanePeakRSSMB, r.CompleteSeconds})
	}
	type line Result // without this method
	return json.Marshal(line(r))
}

// Scenarios of a run.
const (
	// ScenarioPods creates the pods through ReplicaSets and measures their
	// scheduling.
	ScenarioPods = "pods"
	// ScenarioRollout rolls a Deployment of Pods replicas out to a new
	// image and checks its availability throughout.
	ScenarioRollout = "rollout"
	// ScenarioJob runs a Job of Pods completions, Parallelism at a time,
	// until it is Complete.
	ScenarioJob = "job"
	// ScenarioDaemonSet writes one DaemonSet, whose controller makes a
	// pod for every node, and measures them as ScenarioPods does; Pods is
	// the number of nodes.
	ScenarioDaemonSet = "daemonset"
)

// ErrIncomplete is returned (with the result) when the timeout ended the
// run before every pod was scheduled.
var ErrIncomplete = errors.New("not every pod was scheduled before the timeout")

// AgentsPerTransport is how many hollow agents share one transport (and
// so, mostly, one HTTP/2 connection).
const AgentsPerTransport = 100

func (o *Options) defaults() error {
	if o.Nodes <= 0 {
		return errors.New("sim: --nodes must be positive")
	}
	if o.Pods < 0 {
		return errors.New("sim: --pods must not be negative")
	}
	if o.NodeCPU.IsZero() {
		o.NodeCPU = resource.MustParse("32")
	}
	if o.NodeMemory.IsZero() {
		o.NodeMemory = resource.MustParse("128Gi")
	}
	if o.PodCPU.IsZero() {
		o.PodCPU = resource.MustParse("100m")
	}
	if o.PodMemory.IsZero() {
		o.PodMemory = resource.MustParse("128Mi")
	}
	if o.ReplicaSets <= 0 {
		o.ReplicaSets = 1
	}
	switch o.Scenario {
	case "":
		o.Scenario = ScenarioPods
	case ScenarioPods, ScenarioRollout, ScenarioJob:
	case ScenarioDaemonSet:
		o.Pods = o.Nodes
	default:
		return fmt.Errorf("sim: scenario %q is not %s, %s, %s or %s", o.Scenario, ScenarioPods, ScenarioRollout, ScenarioJob, ScenarioDaemonSet)
	}
	if o.Parallelism <= 0 {
		o.Parallelism = o.Pods
	}
	if o.Store == "" {
		o.Store = controlplane.StoreMemory
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return nil
}

// tracker records, per pod, when it was created, bound and reported
// Running, as nanoseconds since the run's start (0: not yet).
type tracker struct {
	start                   time.Time
	created, bound, running []int64
	// index numbers the pods in the order the watch first sees them.
	index                      map[string]int
	nCreated, nBound, nRunning atomic.Int64
	// cpu reads the CPU time of the control plane and the agents; cpuStart
	// and cpuBound are it at the start and when the last pod was bound.
	cpu                func() cpuTime
	cpuStart, cpuBound cpuTime
}

func (t *tracker) since() int64 { return max(1, int64(time.Since(t.start))) }

// Run runs a simulation and returns its result; ErrIncomplete (with the
// result) when the timeout came before every pod was scheduled.
func Run(ctx context.Context, opts Options) (*Result, error) {
	return run(ctx, opts, nil)
}

// run is Run; inspect, when set, sees the store once the measurement is
// over, before the control plane stops.
func run(ctx context.Context, opts Options, inspect func(*store.Store)) (*Result, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	// The run's lines and, with the agents in a process of their own, that
	// process's stderr may come at once.
	opts.Progress = &lockedWriter{w: opts.Progress}
	ctx, cancelTimeout := context.WithTimeout(ctx, opts.Timeout)
	defer cancelTimeout()
	runStart := time.Now()
	progressf := func(format string, args ...any) {
		fmt.Fprintf(opts.Progress, "sim: %6.1fs "+format+"\n", append([]any{time.Since(runStart).Seconds()}, args...)...)
	}

	dir, err := os.MkdirTemp("", "berth-sim-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cfg := controlplane.Config{
		DataDir: dir, Listen: "127.0.0.1:0", Store: opts.Store, Logger: opts.Logger, Clock: opts.Clock,
		MostAllocated: opts.MostAllocated,
	}
	if strings.HasPrefix(opts.Store, controlplane.StoreEtcdScheme) {
		cfg.Etcd.Prefix = fmt.Sprintf("/berth-sim/%s", filepath.Base(dir))
		defer dropEtcdPrefix(opts.Store, cfg.Etcd.Prefix, opts.Logger)
	}
	cp, err := controlplane.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	// The control plane ends when the run stops it, never by the timeout's
	// deadline, which its parts would take for a failure.
	cpCtx, stopCP := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopCP()
	defer stop()
	cpErr := make(chan error, 1)
	wg.Go(func() { cpErr <- cp.Run(cpCtx) })
	// Over etcd the control plane campaigns first: the run begins once
	// it leads.
	select {
	case <-cp.Leading():
	case err := <-cpErr:
		return nil, fmt.Errorf("sim: control plane: %w", err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	st := cp.Store()
	creds := cp.Credentials()

	perNode := max(110, 2*int(math.Ceil(float64(opts.Pods)/float64(opts.Nodes))))
	fo := FleetOptions{
		Server:    "https://" + cp.Addr().String(),
		CAPEM:     creds.CAPEM,
		NodeToken: creds.NodeToken,
		Nodes:     opts.Nodes,
		Capacity:  NodeCapacity(opts.NodeCPU, opts.NodeMemory, perNode),
		Mix:       opts.Mix,
		// The agents' goroutines carry a profile label, and so do the
		// client connections they open: a CPU profile of the run then
		// tells the hollow agents' work (which a real cluster does on
		// other machines) from the control plane's.
		ProfileLabel:     true,
		StartConcurrency: opts.StartConcurrency,
		Clock:            opts.Clock,
		Logger:           opts.Logger,
		Progress:         progressf,
	}
	// Start the agents and wait until every one has registered and
	// watches its pods.
	fl, err := startAgents(runCtx, &opts, fo, dir, cpErr, &wg)
	if err != nil {
		return nil, err
	}
	defer fl.stop()
	// finish ends a measured run: the store inspected and the heap profiled
	// while everything still runs, then the agents and the control plane
	// stopped, and res (nil: none) given the run's peak memory.
	finish := func(res *Result) {
		if inspect != nil {
			inspect(st)
		}
		if opts.Measured != nil {
			opts.Measured()
		}
		fl.stop()
		stop()
		stopCP()
		if res != nil {
			fl.memory(res)
		}
		if n := fl.failedCalls(); n > 0 {
			progressf("%d agent API calls failed", n)
		}
	}

	if opts.Measuring != nil {
		opts.Measuring()
	}
	if opts.Scenario == ScenarioRollout {
		res, err := rollout(ctx, st, &opts, progressf)
		finish(res)
		return res, err
	}
	if opts.Scenario == ScenarioJob {
		res, err := runJob(ctx, st, &opts, progressf)
		finish(res)
		return res, err
	}

	// Watch the store for bindings and Running reports, then create the
	// pods.
	t := &tracker{
		created: make([]int64, opts.Pods),
		bound:   make([]int64, opts.Pods),
		running: make([]int64, opts.Pods),
		index:   make(map[string]int, opts.Pods),
	}
	rev := st.Revision()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	t.start = time.Now()
	t.cpuStart = fl.cpu()
	t.cpu = fl.cpu
	watchCtx, stopWatch := context.WithCancel(runCtx)
	defer stopWatch()
	var ww sync.WaitGroup
	ww.Go(func() { t.watch(watchCtx, st, rev, opts.Logger) })
	createErr := make(chan error, 1)
	ww.Go(func() { createErr <- t.createPods(watchCtx, st, &opts) })

	done := false
	for !done {
		select {
		case err := <-createErr:
			if err != nil && ctx.Err() == nil {
				stopWatch()
				ww.Wait()
				return nil, fmt.Errorf("sim: create pods: %w", err)
			}
		case <-tick.C:
			progressf("created %d/%d bound %d running %d", t.nCreated.Load(), opts.Pods, t.nBound.Load(), t.nRunning.Load())
		case <-ctx.Done():
			done = true
		case err := <-cpErr:
			if ctx.Err() != nil {
				done = true
				break
			}
			stopWatch()
			ww.Wait()
			return nil, fmt.Errorf("sim: control plane stopped: %v", err)
		}
		if int(t.nBound.Load()) == opts.Pods && int(t.nRunning.Load()) == opts.Pods {
			done = true
		}
		if !done {
			// Check again soon rather than only at the next tick.
			select {
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				done = true
			}
		}
	}
	progressf("created %d/%d bound %d running %d", t.nCreated.Load(), opts.Pods, t.nBound.Load(), t.nRunning.Load())
	stopWatch()
	ww.Wait()
	if n := notReady(st); n > 0 {
		progressf("%d nodes not Ready: their heartbeats came too late", n)
	}
	res := t.result(opts.Nodes, opts.Pods)
	finish(res)
	if res.Scheduled < res.Pods {
		return res, ErrIncomplete
	}
	return res, nil
}

// createPods writes K ReplicaSets rs-0…rs-K-1 whose replicas add up to
// M, in one transaction; the ReplicaSet controller creates the pods.
func (t *tracker) createPods(ctx context.Context, st *store.Store, o *Options) error {
	if o.Scenario == ScenarioDaemonSet {
		if _, err := st.Create(ctx, makeDaemonSet(o)); err != nil {
			return fmt.Errorf("create daemonset: %w", err)
		}
		return nil
	}
	if _, err := st.Txn(ctx, func(tx *store.Txn) error {
		for k := range o.ReplicaSets {
			if _, err := tx.Create(makeReplicaSet(k, o)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("create replicasets: %w", err)
	}
	return nil
}

// makeReplicaSet is ReplicaSet k, with replicas for its share of the pods.
func makeReplicaSet(k int, o *Options) *api.ReplicaSet {
	name := fmt.Sprintf("rs-%d", k)
	replicas := int32(o.Pods / o.ReplicaSets)
	if k < o.Pods%o.ReplicaSets {
		replicas++
	}
	labels := map[string]string{"app": name, "pod-template-hash": "7d4b9c8f6"}
	tmpl := makePod(0, metav1.OwnerReference{Name: name}, o)
	if o.Mix {
		mixPodSpec(&tmpl.Spec, k, labels, replicas, o.Nodes)
	}
	if o.Spread && k%4 == 0 {
		spreadPodSpec(&tmpl.Spec, labels)
	}
	rs := &api.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
		Spec: api.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: api.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec},
		},
	}
	api.Default(rs)
	return rs
}

// makeDaemonSet is the DaemonSet of the daemonset scenario, its pods
// shaped as the ReplicaSets'.
func makeDaemonSet(o *Options) *api.DaemonSet {
	labels := map[string]string{"app": "ds"}
	tmpl := makePod(0, metav1.OwnerReference{Name: "ds"}, o)
	ds := &api.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ds"},
		Spec: api.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: api.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec},
		},
	}
	api.Default(ds)
	return ds
}

func makePod(i int, owner metav1.OwnerReference, o *Options) *api.Pod {
	owner.Controller = ptr(true)
	owner.BlockOwnerDeletion = ptr(true)
	p := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       "default",
			Name:            fmt.Sprintf("%s-%07d", owner.Name, i),
			Labels:          map[string]string{"app": owner.Name, "pod-template-hash": "7d4b9c8f6"},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: api.PodSpec{
			Containers: []api.Container{{
				Name:  "web",
				Image: "web:1.0",
				// No ports: under the exec runtime every containerPort is
				// a host port (SPEC §4), which would allow one pod a node.
				Command: []string{"/bin/web"},
				Resources: api.ResourceRequirements{Requests: api.ResourceList{
					api.ResourceCPU:    o.PodCPU,
					api.ResourceMemory: o.PodMemory,
				}},
			}},
			RestartPolicy: api.RestartPolicyAlways,
		},
		Status: api.PodStatus{Phase: api.PodPending},
	}
	// Defaulted as the API server would default it, so that agents'
	// status updates (which the server defaults) see the same spec.
	api.Default(p)
	return p
}

func ptr[T any](v T) *T { return &v }

// watch records pod creations, bindings and Running reports from the
// store until ctx ends.
func (t *tracker) watch(ctx context.Context, st *store.Store, rev uint64, log *slog.Logger) {
	for ctx.Err() == nil {
		w, err := st.Watch(ctx, store.WatchOptions{Kind: podKind, Revision: rev})
		if err != nil {
			if errors.Is(err, store.ErrGone) {
				log.Warn("sim: watch history gone, listing")
				rev = t.catchUp(st)
				continue
			}
			return
		}
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				w.Stop()
				break
			}
			rev = ev.Revision
			t.observe(ev.Object)
		}
	}
}

// observe notes a pod's state: created when first seen, then bound and
// Running. Pods beyond the M expected are ignored.
func (t *tracker) observe(o api.Object) {
	p, ok := o.(*api.Pod)
	if !ok {
		return
	}
	now := t.since()
	i, seen := t.index[p.Name]
	if !seen {
		if len(t.index) >= len(t.created) {
			return
		}
		i = len(t.index)
		t.index[p.Name] = i
		t.created[i] = now
		t.nCreated.Add(1)
	}
	if p.Spec.NodeName == "" {
		return
	}
	if t.bound[i] == 0 {
		t.bound[i] = now
		if int(t.nBound.Add(1)) == len(t.bound) {
			t.cpuBound = t.cpu()
		}
	}
	if p.Status.Phase == api.PodRunning && t.running[i] == 0 {
		t.running[i] = now
		t.nRunning.Add(1)
	}
}

// catchUp lists the pods after the watch lost its place and returns the
// revision to watch from.
func (t *tracker) catchUp(st *store.Store) uint64 {
	pods, rev, err := st.List(podKind, store.Filter{})
	if err != nil {
		return st.Revision()
	}
	for _, p := range pods {
		t.observe(p)
	}
	return rev
}

// result computes the summary from the per-pod times.
func (t *tracker) result(nodes, pods int) *Result {
	res := &Result{Nodes: nodes, Pods: pods}
	var first, last int64 = math.MaxInt64, 0
	var bind, run []float64
	for i := range pods {
		if t.created[i] != 0 {
			first = min(first, t.created[i])
		}
		if t.bound[i] == 0 {
			continue
		}
		res.Scheduled++
		last = max(last, t.bound[i])
		bind = append(bind, ms(t.bound[i]-t.created[i]))
		if t.running[i] != 0 {
			res.Running++
			run = append(run, ms(max(0, t.running[i]-t.bound[i])))
		}
	}
	if res.Scheduled > 0 && last > first {
		secs := time.Duration(last - first).Seconds()
		res.ScheduleSeconds = round(secs, 3)
		res.PodsPerSecond = round(float64(res.Scheduled)/secs, 1)
		res.BoundSeconds = round(time.Duration(last).Seconds(), 3)
	}
	if t.cpuBound.process > 0 {
		cp := (t.cpuBound.process - t.cpuStart.process).Seconds()
		if t.cpuBound.separate {
			res.ControlPlaneCPUSeconds = round(cp, 2)
			res.ControlPlaneCPUMsPerPod = round(1000*cp/float64(res.Scheduled), 3)
		}
		// With the agents apart, the whole needs both of their readings.
		if !t.cpuBound.agentsMissing && !t.cpuStart.agentsMissing {
			all := cp + (t.cpuBound.agents - t.cpuStart.agents).Seconds()
			res.CPUSeconds = round(all, 2)
			res.CPUMsPerPod = round(1000*all/float64(res.Scheduled), 3)
		}
	}
	res.P50BindMs = round(percentile(bind, 0.50), 2)
	res.P99BindMs = round(percentile(bind, 0.99), 2)
	res.P99RunningMs = round(percentile(run, 0.99), 2)
	return res
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func round(v float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(v*p) / p
}

// percentile is the nearest-rank percentile of vs (0 for none).
func percentile(vs []float64, q float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	i := int(math.Ceil(q*float64(len(vs)))) - 1
	return vs[min(max(i, 0), len(vs)-1)]
}

// peakRSSMB is the process's peak resident set in MiB.
func peakRSSMB() float64 { return round(float64(peakRSSKiB())/1024, 1) }

// peakRSSKiB is the process's peak resident set in KiB: VmHWM from
// /proc/self/status, else getrusage's maxrss (KiB on Linux, bytes on
// macOS).
func peakRSSKiB() int64 {
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.Lines(string(data)) {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				f := strings.Fields(rest)
				if len(f) >= 1 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						return kb
					}
				}
			}
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		if runtime.GOOS == "darwin" {
			return int64(ru.Maxrss) / 1024
		}
		return int64(ru.Maxrss)
	}
	return 0
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// notReady counts the nodes whose Ready condition is not True: the node
// lifecycle controller marks a node whose heartbeats stop or come late.
func notReady(st *store.Store) int {
	n := 0
	_ = st.Snapshot().Each(nodeKind, store.Filter{}, func(o api.Object) bool {
		for _, c := range o.(*api.Node).Status.Conditions {
			if c.Type == api.NodeReady && c.Status != api.ConditionTrue {
				n++
			}
		}
		return true
	})
	return n
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
