package pods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// Config is what a Manager is given: its node, runtime and data
// directory, and the agent's parts it reaches the API through.
type Config struct {
	NodeName string
	// NodeIP is the pod IP and the host IP: under the exec runtime pods
	// share the node's network.
	NodeIP  string
	Runtime runtime.Runtime
	// DataDir is the agent's data directory; a pod's own files (its
	// volumes) live under <DataDir>/pods/<uid>/volumes/<name>.
	DataDir string
	// RuntimeName names the runtime, for messages.
	RuntimeName string
	// NameServer is the DNS server pods with dnsPolicy ClusterFirst are
	// given under a PodRuntime (the pod bridge's gateway, where the
	// node-local DNS forwarder listens); empty leaves them the node's
	// resolv.conf.
	NameServer string
	// ResolvConf is the node's resolv.conf, what dnsPolicy Default gives
	// a pod and whose search domains ClusterFirst adds
	// (DefaultResolvConf when empty), as the kubelet's --resolv-conf.
	ResolvConf string
	// HostsFile is the node's hosts file, which hostNetwork pods under a
	// CRI runtime see (DefaultHostsFile when empty).
	HostsFile string
	// Allocatable is the node's allocatable, what the downward API's
	// resourceFieldRef reads for a limit a container does not set.
	Allocatable api.ResourceList
	// AllowedUnsafeSysctls are the sysctls, or patterns ending in *, pods
	// may set beyond the safe ones (SafeSysctls), as the kubelet's
	// --allowed-unsafe-sysctls.
	AllowedUnsafeSysctls []string
	// MemoryCapacity is the node's memory, for the oom_score_adj of
	// Burstable containers.
	MemoryCapacity int64
	Reporter       StatusReporter
	// Refs reads ConfigMaps, Secrets and claims; nil in standalone mode,
	// where references fail with a clear message in the container's
	// waiting state.
	Refs RefResolver
	// Server is the API server's URL as the agent reaches it, "" for a
	// standalone agent: pods find the server at its host and port
	// (KUBERNETES_SERVICE_HOST and _PORT).
	Server string
	// CAData is the PEM of the CAs the agent trusts for the server, written
	// beside each pod's service-account token as ca.crt; none when the
	// agent trusts the system's CAs or none at all.
	CAData []byte
	// Events receives the workers' pod events (Started, Killing, BackOff,
	// Unhealthy, Failed); nil records none.
	Events Events
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// StatusReporter is where pod status goes (the API through the agent, or a
// mirror pod for a static pod).
type StatusReporter interface {
	// ReportStatus is called when a pod's status changed (not on every
	// loop; coalesce). A status is sent once ReportStatus returns nil, so
	// it must return an error for one it did not deliver: ErrNotConnected
	// for one it has nowhere to send yet. The worker sends it again later.
	ReportStatus(ctx context.Context, pod *api.Pod, status api.PodStatus) error
	// PodTerminated is called once every container of a pod that has a
	// deletionTimestamp has stopped, so the agent can remove it from the
	// API for good.
	PodTerminated(ctx context.Context, pod *api.Pod) error
}

// ErrNotConnected is a StatusReporter's error for a status it cannot send
// before the agent has connected to the server. Workers try again without
// logging it as an error: static pods run long before the server answers.
var ErrNotConnected = errors.New("not connected to the server")

// RefResolver reads what a pod's env and volumes reference.
type RefResolver interface {
	ConfigMap(ctx context.Context, namespace, name string) (*api.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*api.Secret, error)
	// ClaimPath is the host directory of the volume bound to a
	// PersistentVolumeClaim.
	ClaimPath(ctx context.Context, namespace, claim string) (string, error)
}

// Manager runs the pods bound to this node: one worker goroutine per
// pod converges the runtime's runs to the pod's spec and reports its
// status. Containers outlive the manager, so an agent restart adopts them.
type Manager struct {
	o Config

	// path is the PATH of a container whose pod sets none (podPath).
	path string
	// apiServer is the API server's address for the containers
	// (apiServerEnv).
	apiServer []string
	// sysctls are the sysctls pods may set.
	sysctls *sysctlAllowlist

	mu      sync.Mutex
	ctx     context.Context // set by Run; nil before
	workers map[types.UID]*podWorker
	wg      sync.WaitGroup
}

// New checks the configuration and makes a manager; Run starts it.
func New(o Config) (*Manager, error) {
	if o.Runtime == nil {
		return nil, errors.New("pod manager: no runtime")
	}
	if o.Reporter == nil {
		return nil, errors.New("pod manager: no status reporter")
	}
	if o.DataDir == "" {
		return nil, errors.New("pod manager: no data directory")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	apiServer, err := apiServerEnv(o.Server)
	if err != nil {
		return nil, fmt.Errorf("pod manager: %w", err)
	}
	sysctls, err := newSysctlAllowlist(o.AllowedUnsafeSysctls)
	if err != nil {
		return nil, fmt.Errorf("pod manager: allowed unsafe sysctls: %w", err)
	}
	path, err := podPath(o.DataDir)
	if err != nil {
		o.Logger.Warn("pods' PATH: no link to this agent's berth; a pod's shell may run another berth found first", "err", err)
	}
	return &Manager{o: o, path: path, apiServer: apiServer, sysctls: sysctls, workers: map[types.UID]*podWorker{}}, nil
}

// Run adopts what the runtime already runs (runs of a pod later Sync'd
// with the same UID are taken over as they are) and serves the workers
// until ctx ends. It leaves containers running when it returns: they
// outlive the agent.
func (m *Manager) Run(ctx context.Context) error {
	if _, err := m.o.Runtime.List(ctx); err != nil {
		return fmt.Errorf("pod manager: list runtime: %w", err)
	}
	m.mu.Lock()
	m.ctx = ctx
	for _, w := range m.workers {
		m.startLocked(w)
	}
	m.mu.Unlock()

	exited := m.o.Runtime.Exited()
	for {
		select {
		case <-ctx.Done():
			m.wg.Wait()
			return nil
		case id := <-exited:
			m.mu.Lock()
			if w := m.workers[types.UID(id.PodUID)]; w != nil {
				w.poke()
			}
			m.mu.Unlock()
		}
	}
}

// startLocked starts w's goroutine once the manager runs.
func (m *Manager) startLocked(w *podWorker) {
	if m.ctx == nil || w.running {
		return
	}
	w.running = true
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		w.run(m.ctx)
		m.mu.Lock()
		if m.workers[w.uid] == w {
			delete(m.workers, w.uid)
		}
		m.mu.Unlock()
	}()
}

// workerLocked returns uid's worker, making one if need be.
func (m *Manager) workerLocked(uid types.UID) *podWorker {
	w := m.workers[uid]
	if w == nil {
		w = newPodWorker(m, uid)
		m.workers[uid] = w
	}
	return w
}

// Sync adds or updates a pod; a deletionTimestamp starts its graceful
// termination.
func (m *Manager) Sync(pod *api.Pod) {
	pod = pod.DeepCopy()
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.workerLocked(pod.UID)
	w.setPod(pod)
	m.startLocked(w)
}

// ResendStatus has the pod's worker report its status again though it has
// not changed: where it went is gone (a mirror pod deleted and posted
// anew, with no status).
func (m *Manager) ResendStatus(uid types.UID) {
	m.mu.Lock()
	w := m.workers[uid]
	m.mu.Unlock()
	if w != nil {
		w.resend.Store(true)
		w.poke()
	}
}

// Forget stops the pod (with its grace) and removes its files and runs:
// it is gone for good.
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.workerLocked(uid)
	w.setForget()
	m.startLocked(w)
}

// ForgetAllExcept forgets every pod not in keep, those with a worker and
// the orphans the runtime still runs: called after the first full listing
// of the node's pods, so pods deleted while the agent was down stop. It
// counts the running containers of the pods kept (adopted, after a
// restart) and the orphan pods the runtime had runs of (being stopped).
func (m *Manager) ForgetAllExcept(keep map[types.UID]bool) (adopted, orphans int) {
	uids := map[types.UID]bool{}
	m.mu.Lock()
	for uid := range m.workers {
		uids[uid] = true
	}
	ctx := m.ctx
	m.mu.Unlock()
	if ctx == nil {
		ctx = context.Background()
	}
	runs, err := m.o.Runtime.List(ctx)
	if err != nil {
		m.o.Logger.Error("list runtime for orphans", "err", err)
	}
	orphaned := map[types.UID]bool{}
	for _, r := range runs {
		uid := types.UID(r.ID.PodUID)
		uids[uid] = true
		switch {
		case !keep[uid]:
			orphaned[uid] = true
		case r.State == runtime.StateRunning:
			adopted++
		}
	}
	for uid := range uids {
		if !keep[uid] {
			m.Forget(uid)
		}
	}
	return adopted, len(orphaned)
}

// Evict stops the pod within EvictionGrace and marks it Failed with reason
// Evicted and message, which a Warning event Evicted records too, as the
// kubelet does; it returns once the pod's containers have stopped and the
// status was reported (or ctx ended).
func (m *Manager) Evict(ctx context.Context, uid types.UID, message string) error {
	m.mu.Lock()
	w := m.workers[uid]
	var done <-chan struct{}
	if w != nil && w.hasPod() {
		done = w.setEvict(eviction.ReasonEvicted, message, func(pod *api.Pod) {
			if m.o.Events != nil {
				m.o.Events.PodEvent(pod, api.EventTypeWarning, eviction.ReasonEvicted, message)
			}
		})
	}
	m.mu.Unlock()
	if done == nil {
		return fmt.Errorf("evict pod %s: not running on this node", uid)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("evict pod %s: %w", uid, ctx.Err())
	}
}

// Usage lists the running pods with their working set and each running
// container's, for eviction and the resource metrics.
func (m *Manager) Usage(ctx context.Context) []eviction.PodUsage {
	pods, byPod, err := m.podRuns(ctx, (*podWorker).currentPod, true)
	if err != nil {
		m.o.Logger.Error("list runtime for usage", "err", err)
		return nil
	}
	var out []eviction.PodUsage
	for _, p := range pods {
		rs := byPod[string(p.UID)]
		if len(rs) == 0 {
			continue
		}
		u := eviction.PodUsage{Pod: p, Static: IsStatic(p)}
		for _, r := range rs {
			s, err := m.o.Runtime.Stats(ctx, r.ID)
			if err != nil {
				continue // it may have just exited
			}
			u.MemoryBytes += s.MemoryBytes
			u.Containers = append(u.Containers, eviction.ContainerUsage{Name: r.ID.Name, Run: r.ID.String(), MemoryBytes: s.MemoryBytes, CPUNanos: s.CPUNanos})
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod.UID < out[j].Pod.UID })
	return out
}

// podRuns is the pods pick chooses of the workers', and the runtime's runs
// of each by pod UID: only the running ones with runningOnly.
func (m *Manager) podRuns(ctx context.Context, pick func(*podWorker) *api.Pod, runningOnly bool) ([]*api.Pod, map[string][]runtime.Status, error) {
	m.mu.Lock()
	pods := make([]*api.Pod, 0, len(m.workers))
	for _, w := range m.workers {
		if p := pick(w); p != nil {
			pods = append(pods, p)
		}
	}
	m.mu.Unlock()
	runs, err := m.o.Runtime.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	byPod := map[string][]runtime.Status{}
	for _, r := range runs {
		if !runningOnly || r.State == runtime.StateRunning {
			byPod[r.ID.PodUID] = append(byPod[r.ID.PodUID], r)
		}
	}
	return pods, byPod, nil
}

// SetNameServer sets the DNS server of the pods started from now on.
func (m *Manager) SetNameServer(server string) {
	m.mu.Lock()
	m.o.NameServer = server
	m.mu.Unlock()
}

func (m *Manager) nameServer() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.o.NameServer
}

// IsStatic says whether a pod came from the agent's own manifests.
func IsStatic(p *api.Pod) bool {
	src, ok := p.Annotations[AnnotationConfigSource]
	return ok && src != ConfigSourceAPI
}

// PodAddresses implements the container server's PodAddresses: a pod of
// this node is reached on the node's network, at localhost first (where
// the kubelet dials, inside the pod) and then at the node's address, which
// is the pod's.
func (m *Manager) PodAddresses(namespace, name string) ([]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.podNamed(namespace, name)
	if p == nil {
		return nil, false
	}
	if w := m.workers[p.UID]; w != nil && m.podRuntime() != nil && !p.Spec.HostNetwork {
		// A pod of its own network is reached at its address.
		return w.knownIPs(), true
	}
	addrs := []string{"127.0.0.1"}
	if m.o.NodeIP != "" {
		addrs = append(addrs, m.o.NodeIP)
	}
	return addrs, true
}

// PodPortForward implements the container server's PortForward: under a
// runtime that forwards to a pod's ports itself (the CRI's PortForward,
// inside the pod's network namespace, as the kubelet does), a session of
// the runtime's; nil under one that does not.
func (m *Manager) PodPortForward(ctx context.Context, namespace, name string) (runtime.PortForwardSession, error) {
	pf, ok := m.o.Runtime.(runtime.PortForwarder)
	if !ok {
		return nil, nil
	}
	m.mu.Lock()
	p := m.podNamed(namespace, name)
	m.mu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("pod %s/%s is not running on this node: %w", namespace, name, runtime.ErrNotFound)
	}
	return pf.PortForward(ctx, string(p.UID))
}

// podNamed is the current version of a pod this node runs, nil for none.
// The caller holds mu.
func (m *Manager) podNamed(namespace, name string) *api.Pod {
	for _, w := range m.workers {
		if p := w.currentPod(); p != nil && p.Namespace == namespace && p.Name == name {
			return p
		}
	}
	return nil
}

// ContainerRun is the current (or, with previous, the one before) run of a
// container, for its logs or an exec. container "" means the pod's only container.
func (m *Manager) ContainerRun(namespace, name, container string, previous bool) (runtime.ID, error) {
	m.mu.Lock()
	pod := m.podNamed(namespace, name)
	ctx := m.ctx
	m.mu.Unlock()
	if pod == nil {
		return runtime.ID{}, fmt.Errorf("pod %s/%s is not running on this node: %w", namespace, name, runtime.ErrNotFound)
	}
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	if container == "" {
		if len(pod.Spec.Containers) != 1 {
			return runtime.ID{}, fmt.Errorf("a container name must be specified for pod %s/%s, choose one of: [%s]", namespace, name, strings.Join(names, " "))
		}
		container = pod.Spec.Containers[0].Name
	}
	if !slices.Contains(names, container) {
		return runtime.ID{}, fmt.Errorf("container %s is not valid for pod %s/%s, choose one of: [%s]", container, namespace, name, strings.Join(names, " "))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	all, err := m.o.Runtime.List(ctx)
	if err != nil {
		return runtime.ID{}, fmt.Errorf("list runtime: %w", err)
	}
	var runs []runtime.Status
	for _, r := range all {
		if r.ID.PodUID == string(pod.UID) && r.ID.Name == container {
			runs = append(runs, r)
		}
	}
	runs = groupRuns(runs)[container]
	switch {
	case previous && len(runs) >= 2:
		return runs[len(runs)-2].ID, nil
	case previous:
		return runtime.ID{}, fmt.Errorf("previous terminated container %q in pod %q not found", container, name)
	case len(runs) == 0:
		// The kubelet's words, with the reason the container waits.
		if reason := waitingReasonOf(pod, container); reason != "" {
			return runtime.ID{}, fmt.Errorf("container %q in pod %q is waiting to start: %s", container, name, reason)
		}
		return runtime.ID{}, fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, name)
	}
	return runs[len(runs)-1].ID, nil
}

// waitingReasonOf is the reason a container of pod waits, as its status
// last said, "" if it does not say.
func waitingReasonOf(pod *api.Pod, container string) string {
	for _, list := range [][]api.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.Name == container && cs.State.Waiting != nil {
				return cs.State.Waiting.Reason
			}
		}
	}
	return ""
}

// removePodFiles deletes the pod's own directory (its emptyDirs and
// projected volumes; hostPath and claim volumes live elsewhere).
func (m *Manager) removePodFiles(uid types.UID) error {
	if uid == "" {
		return nil
	}
	if err := m.removePodVolumes(uid); err != nil {
		return fmt.Errorf("remove files of pod %s: %w", uid, err)
	}
	if err := os.RemoveAll(podDir(m.o.DataDir, string(uid))); err != nil {
		return fmt.Errorf("remove files of pod %s: %w", uid, err)
	}
	return nil
}

// removePodVolumes deletes the volumes the agent made for a pod (its
// emptyDirs, unmounting a tmpfs, and its projected volumes), as the kubelet
// tears down a terminated pod's volumes: an evicted pod's scratch space is
// given back at once, while its logs stay readable.
func (m *Manager) removePodVolumes(uid types.UID) error {
	dir := filepath.Join(podDir(m.o.DataDir, string(uid)), "volumes")
	if err := unmountUnder(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}
