package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/agent/node"
	"github.com/berth-dev/berth/agent/podnet"
	"github.com/berth-dev/berth/agent/pods"
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/agent/runtime/cri"
	"github.com/berth-dev/berth/agent/runtime/exec"
	"github.com/berth-dev/berth/agent/server"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// DefaultPort is the agent's HTTPS port, the kubelet's.
const DefaultPort = 10250

// RuntimeExec is the runtime that runs containers as host processes.
const RuntimeExec = "exec"

// Config is what `berth agent` (and the agent `berth server` runs) is told.
type Config struct {
	// Server is the API's URL; empty runs standalone: static pods only.
	Server string
	// JoinToken is the cluster's node join token.
	JoinToken string
	// CAData is the PEM of the cluster CA; InsecureSkipTLSVerify trusts any
	// server certificate instead.
	CAData                []byte
	InsecureSkipTLSVerify bool

	NodeName string
	NodeIP   string
	Labels   map[string]string
	Taints   []api.Taint
	// Capacity overrides what is read from the host, item by item.
	Capacity api.ResourceList
	// DataDir holds the pods' directories, their logs and the runtime's
	// records.
	DataDir string
	// Listen is the HTTPS address of the container server (default
	// <NodeIP>:10250).
	Listen string
	// ManifestDir and ManifestURL are where static pods come from.
	ManifestDir string
	ManifestURL string
	// EvictionHard holds the hard eviction thresholds (default
	// eviction.DefaultHard).
	EvictionHard string
	// HousekeepingPeriod is how often eviction checks the node's signals
	// and the pods' ephemeral storage (default eviction.DefaultPeriod, the
	// kubelet's 10s).
	HousekeepingPeriod time.Duration
	// Runtime names the container runtime: RuntimeExec (the default),
	// RuntimeContainerd or RuntimeCRI.
	Runtime string
	// PodNetwork is how the node joins the other nodes' pods:
	// PodNetworkHostGW, PodNetworkNone, or empty for host-gw unless the
	// runtime is exec, whose pods share the node's network.
	PodNetwork string
	// ServiceProxy is ServiceProxyNFTables, ServiceProxyNone, or empty
	// for nftables where PodNetwork is host-gw.
	ServiceProxy string
	// ClusterDNS is the cluster DNS server (host:port) the node-local
	// DNS forwarder asks; empty: the Server's host, port 10053.
	ClusterDNS string
	// ContainerRuntimeEndpoint is the CRI socket of RuntimeCRI.
	ContainerRuntimeEndpoint string
	// PauseImage is the sandbox image of the containerd the agent runs
	// (cri.DefaultPauseImage).
	PauseImage string
	// ImageGCHighThresholdPercent, ImageGCLowThresholdPercent and
	// ImageMinimumGCAge are the image garbage collection of a CRI
	// runtime, the kubelet's (cri.DefaultImageGCHighThreshold, ...; zero
	// thresholds take the defaults).
	ImageGCHighThresholdPercent, ImageGCLowThresholdPercent int
	ImageMinimumGCAge                                       time.Duration
	// RegistryConfigDir is the containerd registry hosts directory
	// (config_path) of RuntimeContainerd; empty is under its directory.
	RegistryConfigDir string
	// Registries is a registries.yaml (k3s's format) for the containerd of
	// RuntimeContainerd.
	Registries string
	// PodCIDR is the pods' network when the Node has no spec.podCIDR
	// (RuntimeContainerd, RuntimeCRI); the Node's wins once it has one.
	PodCIDR string
	// CNIConfDir is where the pods' CNI network is written: for
	// RuntimeContainerd under its directory, else /etc/cni/net.d.
	CNIConfDir string
	// AllowedUnsafeSysctls are the sysctls (or patterns ending in *)
	// pods may set beyond the safe ones, as the kubelet's
	// --allowed-unsafe-sysctls.
	AllowedUnsafeSysctls []string
	// Version is reported on the Node.
	Version string
	// HeartbeatPeriod is how often the node's Lease is renewed (default
	// 10s); it must stay well under the server's grace period.
	HeartbeatPeriod time.Duration
	// StatusReportPeriod is how often the Node's status is written when
	// nothing in it changed (default 5m).
	StatusReportPeriod time.Duration

	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Agent is one node's agent, built by New and run by Run.
type Agent struct {
	cfg Config
	log *slog.Logger
	rt  agentRuntime
	// containerd is the containerd the agent runs (RuntimeContainerd).
	containerd *cri.Containerd
	pods       *pods.Manager
	metrics    *MetricsSampler
	podEvents  *apiPodEvents
	capacity   api.ResourceList
	thresholds []eviction.Threshold
	listener   net.Listener
	// nodeID is the agent's node ID, kept in its data dir.
	nodeID string
	// storeUID is the control plane's store the agent joined, kept in its
	// data dir (storeUIDFile); "" before it joined one. Under mu.
	storeUID string
	// serving is the container server's certificate, from the latest join.
	serving servingCert

	// Set once joined; nil in standalone mode.
	client *client.Client
	node   *node.Manager
	mirror *MirrorManager

	mu     sync.Mutex
	static map[types.UID]*api.Pod
	// renewed is a join made for renewal, for the next connected run.
	renewed *api.JoinResponse
	// mirrorDirty wakes the loop that keeps mirror pods in step.
	mirrorDirty chan struct{}
	// nodeRegistered wakes the loop that reads the Node's podCIDR.
	nodeRegistered chan struct{}
	// tookOver says, once, what the first listing of the node's pods made
	// of the containers found running.
	tookOver sync.Once
}

// New checks the configuration, opens the runtime (finding the containers
// an earlier agent left running) and binds the container server's address, so
// that a port in use is an error before Run.
func New(cfg Config) (*Agent, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Runtime == "" {
		cfg.Runtime = RuntimeExec
	}
	switch cfg.Runtime {
	case RuntimeExec, RuntimeContainerd, RuntimeCRI:
	default:
		return nil, fmt.Errorf("--runtime %q: want %s, %s or %s", cfg.Runtime, RuntimeExec, RuntimeContainerd, RuntimeCRI)
	}
	if cfg.PodCIDR != "" {
		if _, err := podnet.Gateway(cfg.PodCIDR); err != nil {
			return nil, fmt.Errorf("--pod-cidr: %w", err)
		}
	}
	if err := cfg.checkPodNetwork(); err != nil {
		return nil, err
	}
	if err := cfg.checkServiceProxy(); err != nil {
		return nil, err
	}
	if cfg.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("node name: %w", err)
		}
		cfg.NodeName = h
	}
	if cfg.NodeIP == "" {
		ip, err := FirstIPv4()
		if err != nil {
			return nil, err
		}
		cfg.NodeIP = ip
	}
	if cfg.DataDir == "" {
		return nil, errors.New("agent: no data dir")
	}
	// Containers get host paths under the data dir (their volumes): a
	// relative one would mean nothing in their working directories.
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	cfg.DataDir = dataDir
	if cfg.Server == "" && cfg.ManifestDir == "" && cfg.ManifestURL == "" {
		return nil, errors.New("agent: standalone (no --server) needs --manifest-dir or --manifest-url")
	}
	if cfg.EvictionHard == "" {
		cfg.EvictionHard = eviction.DefaultHard
	}
	thresholds, err := eviction.ParseThresholds(cfg.EvictionHard)
	if err != nil {
		return nil, fmt.Errorf("--eviction-hard: %w", err)
	}
	// Search only, for others: see pods/access.go. Pods' directories an older
	// agent left open are shut first.
	if err := pods.ClosePodDirs(filepath.Join(cfg.DataDir, "pods")); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	for _, d := range []string{cfg.DataDir, filepath.Join(cfg.DataDir, "pods"), localPathRoot(cfg.DataDir)} {
		if err := pods.EnsureDir(d, pods.DataDirMode); err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
	}
	if d := pods.UnsearchableAncestor(cfg.DataDir); d != "" {
		cfg.Logger.Warn("containers that run as another user (runAsUser) cannot reach their volumes and token: other users may not pass through "+d, "data-dir", cfg.DataDir)
	}
	storeUID, err := loadStoreUID(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	nodeID, err := node.LoadID(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	capacity, err := node.DetectCapacity(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("capacity: %w", err)
	}
	capacity = node.MergeCapacity(capacity, cfg.Capacity)
	rt, cd, err := openRuntime(cfg)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	a := &Agent{
		cfg:            cfg,
		log:            cfg.Logger.With("node", cfg.NodeName),
		rt:             rt,
		containerd:     cd,
		nodeID:         nodeID,
		storeUID:       storeUID,
		capacity:       capacity,
		thresholds:     thresholds,
		static:         map[types.UID]*api.Pod{},
		mirrorDirty:    make(chan struct{}, 1),
		nodeRegistered: make(chan struct{}, 1),
	}
	mem := capacity[api.ResourceMemory]
	a.podEvents = newAPIPodEvents(cfg.NodeName, a.connectedClient, a.log)
	a.pods, err = pods.New(pods.Config{
		NodeName:             cfg.NodeName,
		NodeIP:               cfg.NodeIP,
		Runtime:              rt,
		RuntimeName:          cfg.Runtime,
		DataDir:              cfg.DataDir,
		MemoryCapacity:       mem.Value(),
		Allocatable:          node.Allocatable(capacity, thresholds),
		AllowedUnsafeSysctls: cfg.AllowedUnsafeSysctls,
		Reporter:             reporter{a},
		Refs:                 refs{a},
		Server:               cfg.Server,
		CAData:               cfg.CAData,
		Events:               a.podEvents,
		Clock:                cfg.Clock,
		Logger:               a.log,
	})
	if err != nil {
		a.closeRuntime()
		return nil, err
	}
	if cfg.PodCIDR != "" && a.podRuntime() {
		if err := a.writePodNetwork(cfg.PodCIDR); err != nil {
			a.closeRuntime()
			return nil, err
		}
	}
	if cfg.Server != "" {
		// Standalone there is no one to ask for metrics.
		a.metrics = &MetricsSampler{Pods: a.pods.Usage, Node: node.ReadNodeUsage, Clock: cfg.Clock}
		if cfg.Listen == "" {
			cfg.Listen = net.JoinHostPort(cfg.NodeIP, strconv.Itoa(DefaultPort))
			a.cfg.Listen = cfg.Listen
		}
		l, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			a.closeRuntime()
			return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
		}
		a.listener = l
	}
	return a, nil
}

// closeRuntime closes the runtime and stops the containerd the agent
// runs; the containers keep running.
func (a *Agent) closeRuntime() {
	a.rt.Close()
	if a.containerd != nil {
		a.containerd.Stop()
	}
}

// podRuntime says whether pods run in sandboxes of their own network.
func (a *Agent) podRuntime() bool {
	_, ok := a.rt.(runtime.PodRuntime)
	return ok
}

// Addr is the container server's address (nil standalone).
func (a *Agent) Addr() net.Addr {
	if a.listener == nil {
		return nil
	}
	return a.listener.Addr()
}

// Run runs the agent until ctx ends: it joins the cluster (retrying while
// the server is unreachable, and running static pods meanwhile), registers
// the Node, then runs the bound pods, the heartbeat, eviction and the log
// server. Containers keep running after it returns: a restarted agent
// takes them over. It ends with a *node.ClaimedError when another agent
// registered the Node of its name.
func (a *Agent) Run(ctx context.Context) error {
	defer a.closeRuntime()
	if err := protectFromOOMKiller(AgentOOMScoreAdj); err != nil {
		a.log.Warn("the agent is not protected from the OOM killer", "err", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	goRun := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				err = fmt.Errorf("%s: %w", name, err)
				errs <- err
				cancel(err)
			}
		}()
	}
	goRun("pods", a.pods.Run)
	goRun("pod events", a.podEvents.Run)
	if r, ok := a.rt.(*cri.Runtime); ok {
		gc := cri.NewImageGC(r, a.imageGCPolicy(), a.cfg.Clock)
		goRun("image garbage collection", func(ctx context.Context) error {
			gc.Run(ctx, cri.DefaultImageGCPeriod)
			return nil
		})
	}
	if a.cfg.ManifestDir != "" || a.cfg.ManifestURL != "" {
		sp, err := NewStaticPods(StaticOptions{
			NodeName:    a.cfg.NodeName,
			ManifestDir: a.cfg.ManifestDir,
			ManifestURL: a.cfg.ManifestURL,
			OnChange:    a.setStatic,
			OnError:     a.staticError,
			Clock:       a.cfg.Clock,
			Logger:      a.log,
		})
		if err != nil {
			return err
		}
		goRun("static pods", sp.Run)
	}
	if a.cfg.Server == "" {
		a.log.Info("agent running standalone: static pods only")
		a.wait(ctx, &wg)
		return firstError(errs)
	}
	defer a.listener.Close()
	if a.podRuntime() {
		goRun("pod network", a.podNetwork)
	}
	goRun("metrics", a.metrics.Run)
	goRun("logs", a.serveLogs)
	goRun("cluster", a.runCluster)
	a.wait(ctx, &wg)
	return firstError(errs)
}

// wait waits for Run's goroutines, and says when they start to stop:
// when ctx ends, by a signal or a failure, which it names.
func (a *Agent) wait(ctx context.Context, wg *sync.WaitGroup) {
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	select {
	case <-ctx.Done():
		a.log.Info("shutting down", "reason", context.Cause(ctx))
		<-stopped
	case <-stopped:
	}
}

func firstError(errs chan error) error {
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// runCluster runs connected to the control plane, and joins again each
// time the node credential and serving certificate are due for renewal.
// Pods keep running meanwhile, as they do across an agent restart.
func (a *Agent) runCluster(ctx context.Context) error {
	for {
		err := a.runConnected(ctx)
		if !errors.Is(err, errRenew) {
			return err
		}
		a.log.Info("joining again to renew the node credential and serving certificate")
	}
}

// runConnected joins, registers and runs what needs the control plane,
// until ctx ends, something fails, or the join's credentials are due for
// renewal (errRenew).
func (a *Agent) runConnected(ctx context.Context) error {
	a.mu.Lock()
	renewed := a.renewed
	a.renewed = nil
	a.mu.Unlock()
	var joined api.JoinResponse
	if renewed != nil {
		joined = *renewed
	} else {
		var err error
		if joined, err = a.join(ctx); err != nil {
			return err
		}
	}
	if joined.ServingCertificate == "" {
		a.log.Warn("the server issued no serving certificate: logs are not served")
	} else if err := a.serving.set(joined.ServingCertificate, joined.ServingKey); err != nil {
		return fmt.Errorf("serving certificate from the join: %w", err)
	}
	c, err := client.New(&client.Config{
		Server:                a.cfg.Server,
		Spread:                true,
		Token:                 joined.Token,
		CAData:                a.cfg.CAData,
		InsecureSkipTLSVerify: a.cfg.InsecureSkipTLSVerify,
		UserAgent:             "berth-agent/" + a.cfg.NodeName,
	})
	if err != nil {
		return err
	}
	port, _ := strconv.Atoi(portOf(a.listener.Addr()))
	nm := node.New(node.Options{
		Client:             c,
		Name:               a.cfg.NodeName,
		IP:                 a.cfg.NodeIP,
		ID:                 a.nodeID,
		Labels:             a.cfg.Labels,
		Taints:             a.cfg.Taints,
		Capacity:           a.capacity,
		Allocatable:        node.Allocatable(a.capacity, a.thresholds),
		Port:               int32(port),
		Capabilities:       a.rt.Capabilities(),
		Version:            a.cfg.Version,
		LocalPathRoot:      localPathRoot(a.cfg.DataDir),
		HeartbeatPeriod:    a.cfg.HeartbeatPeriod,
		StatusReportPeriod: a.cfg.StatusReportPeriod,
		Clock:              a.cfg.Clock,
		Logger:             a.log,
	})
	err = a.retry(ctx, "register node", func() error {
		err := nm.Register(ctx)
		if node.IsClaimed(err) {
			return backoff.Permanent(err)
		}
		return err
	})
	if err != nil {
		return err
	}
	a.log.Info("registered node", "server", a.cfg.Server)
	if err := a.retry(ctx, "read the control plane's store identity", func() error { return a.recordStore(ctx, c) }); err != nil {
		return err
	}
	mirror := NewMirrorManager(c, a.cfg.NodeName, a.log)
	mirror.Posted = func(sp *api.Pod) { a.pods.ResendStatus(sp.UID) }
	a.mu.Lock()
	a.client, a.node, a.mirror = c, nm, mirror
	a.mu.Unlock()
	a.pokePodNetwork()
	a.markMirrorsDirty()

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 4)
	run := func(f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				errs <- err
				cancel()
			}
		}()
	}
	run(nm.Run)
	run(a.runMirrors)
	if due, ok := renewalTime(joined, jitter()); ok {
		run(func(ctx context.Context) error { return a.renewAt(ctx, due) })
	}
	run(eviction.New(eviction.Options{
		Thresholds:   a.thresholds,
		Signals:      func() (eviction.Signals, error) { return node.ReadSignals(a.cfg.DataDir) },
		Pods:         a.pods.Usage,
		Storage:      a.pods.Storage,
		Evict:        func(ctx context.Context, p *api.Pod, msg string) error { return a.pods.Evict(ctx, p.UID, msg) },
		SetCondition: nm.SetCondition,
		Period:       a.cfg.HousekeepingPeriod,
		Clock:        a.cfg.Clock,
		Logger:       a.log,
	}).Run)
	run(func(ctx context.Context) error { return a.watchPods(ctx, c) })
	run(func(ctx context.Context) error { return a.reclaimVolumes(ctx, c) })
	if a.cfg.podNetwork() == PodNetworkHostGW {
		run(func(ctx context.Context) error { return a.runPodNetwork(ctx, c) })
	}
	if a.cfg.serviceProxy() == ServiceProxyNFTables {
		run(func(ctx context.Context) error { return a.runServiceProxy(ctx, c) })
	}
	<-ctx.Done()
	wg.Wait()
	return firstError(errs)
}

// join trades a credential for the node credential and a serving
// certificate, retrying while the server is unreachable. The node's own
// credential, kept in the data dir, renews itself; when it cannot (it
// expired, or its Node was deleted), or the agent has none, the join
// token joins the node, which the server refuses while another agent
// keeps the node live. Each credential got is kept in the data dir.
func (a *Agent) join(ctx context.Context) (api.JoinResponse, error) {
	cred, err := loadCredential(a.cfg.DataDir)
	if err != nil {
		return api.JoinResponse{}, err
	}
	var out api.JoinResponse
	if cred != "" {
		out, err = a.joinWith(ctx, cred, "renew the node credential")
		if err == nil {
			return out, saveCredential(a.cfg.DataDir, out.Token)
		}
		if ctx.Err() != nil || !(client.IsUnauthorized(err) || client.IsForbidden(err)) {
			return out, err
		}
		a.log.Warn("the node credential renews itself no more: joining with the join token", "err", err)
	}
	out, err = a.joinWith(ctx, a.cfg.JoinToken, "join "+a.cfg.Server)
	if client.IsForbidden(err) {
		return out, fmt.Errorf("%w: another agent runs node %s: give this agent another --node-name", err, a.cfg.NodeName)
	}
	if err != nil {
		return out, err
	}
	return out, saveCredential(a.cfg.DataDir, out.Token)
}

// joinWith joins with the bearer token tok, retrying while the server is
// unreachable; a refusal is final.
func (a *Agent) joinWith(ctx context.Context, tok, what string) (api.JoinResponse, error) {
	jc, err := client.New(&client.Config{
		Server:                a.cfg.Server,
		Spread:                true,
		Token:                 tok,
		CAData:                a.cfg.CAData,
		InsecureSkipTLSVerify: a.cfg.InsecureSkipTLSVerify,
		UserAgent:             "berth-agent/" + a.cfg.NodeName,
	})
	if err != nil {
		return api.JoinResponse{}, err
	}
	addrs := []string{a.cfg.NodeIP, a.cfg.NodeName}
	if h := hostOf(a.listener.Addr()); h != "" && h != a.cfg.NodeIP && !net.ParseIP(h).IsUnspecified() {
		addrs = append(addrs, h)
	}
	var out api.JoinResponse
	err = a.retry(ctx, what, func() error {
		r, err := jc.Join(ctx, api.JoinRequest{NodeName: a.cfg.NodeName, Addresses: addrs})
		if client.IsUnauthorized(err) || client.IsInvalid(err) || client.IsForbidden(err) {
			return backoff.Permanent(err)
		}
		out = r
		return err
	})
	return out, err
}

// retry runs f with back-off (1s doubling to 30s) until it succeeds, fails
// for good, or ctx ends. Each distinct error is a warning once, its
// repeats are logged at debug.
func (a *Agent) retry(ctx context.Context, what string, f func() error) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = time.Second, 30*time.Second, 0
	b.Clock = backoffClock{a.cfg.Clock}
	warned := ""
	for {
		err := f()
		if err == nil {
			return nil
		}
		var perm *backoff.PermanentError
		if errors.As(err, &perm) {
			return fmt.Errorf("%s: %w", what, withHint(perm.Err))
		}
		err = withHint(err)
		wait := b.NextBackOff()
		level := slog.LevelDebug
		if msg := err.Error(); msg != warned {
			level, warned = slog.LevelWarn, msg
		}
		a.log.Log(ctx, level, "retrying", "what", what, "in", wait, "err", err)
		t := a.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

// withHint adds to err what to do when its cause is one that a retry
// cannot mend but the operator can: a server certificate that does not
// cover the address the agent dials.
func withHint(err error) error {
	var host x509.HostnameError
	if errors.As(err, &host) {
		return fmt.Errorf("%w (the server's --tls-san adds names and addresses to its certificate; or give --server one it covers)", err)
	}
	return err
}

type backoffClock struct{ c clock.Clock }

func (b backoffClock) Now() time.Time { return b.c.Now() }

// watchPods feeds the pod manager the pods bound to this node, and the
// mirror manager the deletions of mirror pods, which it posts again.
func (a *Agent) watchPods(ctx context.Context, c *client.Client) error {
	podKind := api.MustLookupResource("pods")
	inf := client.NewInformer(c, podKind, client.InformerOptions{
		ListOptions: client.ListOptions{FieldSelector: "spec.nodeName=" + a.cfg.NodeName},
		Clock:       a.cfg.Clock,
		Logger:      a.log,
	}, func(e client.Event) {
		p, ok := e.Object.(*api.Pod)
		if !ok {
			return
		}
		if isMirror(p) {
			// A mirror runs nothing: its static pod runs on. Deleted, it
			// is posted again, as the kubelet does.
			if e.Type == client.Deleted || p.DeletionTimestamp != nil {
				a.markMirrorsDirty()
			}
			return
		}
		if e.Type == client.Deleted {
			// Gone from the store: stopped, unless the store is not the
			// one this agent joined (emptied, replaced), whose
			// forgetting a pod says nothing of it.
			if err := a.storeTrusted(ctx, c); err != nil {
				a.storeChanged(ctx, c, err, p.Namespace+"/"+p.Name)
				return
			}
			a.pods.Forget(p.UID)
			return
		}
		a.pods.Sync(p)
	})
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForSync(ctx); err != nil {
		<-done
		return nil
	}
	// What the runtime still runs for pods that are neither bound here nor
	// static was deleted while the agent was away: stop it.
	keep := map[types.UID]bool{}
	for _, o := range inf.List() {
		keep[o.GetUID()] = true
	}
	a.mu.Lock()
	for uid := range a.static {
		keep[uid] = true
	}
	a.mu.Unlock()
	if err := a.storeTrusted(ctx, c); err != nil {
		a.storeChanged(ctx, c, err, "")
	} else {
		adopted, orphans := a.pods.ForgetAllExcept(keep)
		a.tookOver.Do(func() {
			a.log.Info("containers found at start", "adopted", adopted, "orphans_stopped", orphans)
		})
	}
	<-done
	return nil
}

// isMirror reports whether p is a mirror pod an agent posted for a static
// pod (it runs nothing itself).
func isMirror(p *api.Pod) bool {
	_, ok := p.Annotations[api.AnnotationMirror]
	return ok
}

// setStatic takes the desired set of static pods.
func (a *Agent) setStatic(pods []*api.Pod) {
	next := make(map[types.UID]*api.Pod, len(pods))
	for _, p := range pods {
		next[p.UID] = p
	}
	a.mu.Lock()
	prev := a.static
	a.static = next
	a.mu.Unlock()
	for uid := range prev {
		if _, ok := next[uid]; !ok {
			a.pods.Forget(uid)
		}
	}
	for _, p := range pods {
		a.pods.Sync(p)
	}
	a.markMirrorsDirty()
}

func (a *Agent) staticError(err error) {
	a.log.Error("static pods", "err", err)
	c := a.connectedClient()
	if c == nil {
		return
	}
	// The kubelet's node reference: the node's name stands for its UID,
	// so events about a node read the same before and after it
	// re-registers.
	node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: a.cfg.NodeName, UID: types.UID(a.cfg.NodeName)}}
	node.Kind, node.APIVersion = "Node", "v1"
	ctx, cancel := context.WithTimeout(context.Background(), client.DefaultTimeout)
	defer cancel()
	if err := RecordEvent(ctx, c, node, "Warning", "StaticPodInvalid", err.Error()); err != nil {
		a.log.Warn("record event", "err", err)
	}
}

func (a *Agent) markMirrorsDirty() {
	select {
	case a.mirrorDirty <- struct{}{}:
	default:
	}
}

// runMirrors keeps the mirror pods in step with the static pods, retrying
// every 10s after a failure.
func (a *Agent) runMirrors(ctx context.Context) error {
	retry := a.cfg.Clock.NewTicker(10 * time.Second)
	defer retry.Stop()
	failed := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.mirrorDirty:
		case <-retry.C():
			if !failed {
				continue
			}
		}
		a.mu.Lock()
		pods := make([]*api.Pod, 0, len(a.static))
		for _, p := range a.static {
			pods = append(pods, p)
		}
		m := a.mirror
		a.mu.Unlock()
		if m == nil {
			continue
		}
		err := m.Sync(ctx, pods)
		failed = err != nil
		if failed && ctx.Err() == nil {
			a.log.Warn("mirror pods", "err", err)
		}
	}
}

// renewAt joins again at due (or minRenewWait from now, if later) while
// the connected run goes on, and returns errRenew once it has the new
// credentials, so that the run starts over with them. A join refused for
// good (the join token changed) is logged and tried again after
// renewRetry: the current credentials still have a fifth of their life.
// It returns nil if ctx ends first.
func (a *Agent) renewAt(ctx context.Context, due time.Time) error {
	wait := max(due.Sub(a.cfg.Clock.Now()), minRenewWait)
	for {
		t := a.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
		joined, err := a.join(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			a.log.Error("cannot renew the node credential and serving certificate", "err", err, "retry in", renewRetry)
			wait = renewRetry
			continue
		}
		a.mu.Lock()
		a.renewed = &joined
		a.mu.Unlock()
		return errRenew
	}
}

// serveLogs serves container logs to the API server over HTTPS, to clients
// the cluster CA vouches for, with the serving certificate of the latest
// join: it runs across joins, and refuses handshakes before the first.
func (a *Agent) serveLogs(ctx context.Context) error {
	pool := x509.NewCertPool()
	if len(a.cfg.CAData) > 0 && !pool.AppendCertsFromPEM(a.cfg.CAData) {
		return errors.New("logs: the CA file holds no certificate")
	}
	tlsCfg, err := server.ClientAuthConfig(pool)
	if err != nil {
		return err
	}
	tlsCfg.GetCertificate = a.serving.get
	srv := &http.Server{
		Handler: server.New(server.Options{
			Runtime: a.rt, Lookup: a.pods.ContainerRun, ClientCAs: pool, Logger: a.log,
			Clock: a.cfg.Clock, Metrics: a.metrics.Latest, PodAddresses: a.pods.PodAddresses, PortForward: a.pods.PodPortForward,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelDebug),
		// Requests end with the agent: Shutdown does not wait for an
		// exec's connection, which is no longer the server's.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err = srv.Serve(tls.NewListener(a.listener, tlsCfg))
	if errors.Is(err, http.ErrServerClosed) || ctx.Err() != nil {
		return nil
	}
	return err
}

func portOf(addr net.Addr) string {
	_, p, _ := net.SplitHostPort(addr.String())
	return p
}

func hostOf(addr net.Addr) string {
	h, _, _ := net.SplitHostPort(addr.String())
	return h
}

// FirstIPv4 is the first non-loopback IPv4 address of this machine, the
// default node IP.
func FirstIPv4() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("node ip: %w", err)
	}
	for _, ad := range addrs {
		if n, ok := ad.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String(), nil
		}
	}
	return "", errors.New("node ip: no non-loopback IPv4 address; set --node-ip")
}

// reporter writes pod status where it belongs: the pod in the API, or the
// mirror pod of a static pod; nowhere standalone.
type reporter struct{ a *Agent }

func (r reporter) conn() (*client.Client, *MirrorManager) {
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	return r.a.client, r.a.mirror
}

func (r reporter) ReportStatus(ctx context.Context, pod *api.Pod, status api.PodStatus) error {
	c, m := r.conn()
	if pods.IsStatic(pod) {
		switch {
		case r.a.cfg.Server == "":
			return nil // standalone: there is no mirror
		case m == nil:
			return pods.ErrNotConnected
		}
		return m.ReportStatus(ctx, pod, status)
	}
	if c == nil {
		return pods.ErrNotConnected
	}
	// The agent owns a bound pod's status but for the conditions others
	// write (a readiness gate's, DisruptionTarget), which it keeps as it
	// saw them. It writes at the revision it saw, so that a condition
	// written since is not lost: on a conflict it reads the pod again and
	// keeps that one's, as the kubelet reads the pod before each patch.
	p := pod.DeepCopy()
	p.Status = status
	for range 3 {
		_, err := c.UpdateStatus(ctx, p)
		if !client.IsConflict(err) {
			if client.IsNotFound(err) {
				return nil
			}
			return err
		}
		o, err := c.Get(ctx, api.KindOf(pod), pod.Namespace, pod.Name)
		if client.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		latest := o.(*api.Pod)
		if latest.UID != pod.UID {
			return nil // another pod of the name: this one is gone
		}
		p = latest.DeepCopy()
		p.Status = status
		p.Status.Conditions = pods.WithOthersConditions(status.Conditions, latest.Status.Conditions)
	}
	// Written over and over meanwhile: this status goes in whole.
	p.ResourceVersion = ""
	_, err := c.UpdateStatus(ctx, p)
	if client.IsNotFound(err) {
		return nil
	}
	return err
}

func (r reporter) PodTerminated(ctx context.Context, pod *api.Pod) error {
	c, _ := r.conn()
	if pods.IsStatic(pod) || c == nil {
		return nil
	}
	zero := int64(0)
	uid := pod.UID
	_, err := c.Delete(ctx, api.MustLookupResource("pods"), pod.Namespace, pod.Name, &metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if client.IsNotFound(err) || client.IsConflict(err) {
		return nil
	}
	return err
}

// refs reads what pods reference through the node's credential.
type refs struct{ a *Agent }

func (r refs) client() (*client.Client, error) {
	if c := r.a.connectedClient(); c != nil {
		return c, nil
	}
	return nil, errors.New("not connected to the server (standalone agents cannot resolve references)")
}

// getRef reads the object of kind T named, through the server.
func getRef[T api.Object](ctx context.Context, r refs, namespace, name string) (T, error) {
	var zero T
	c, err := r.client()
	if err != nil {
		return zero, err
	}
	o, err := c.Get(ctx, api.KindOf(zero), namespace, name)
	if err != nil {
		return zero, err
	}
	return o.(T), nil
}

func (r refs) ConfigMap(ctx context.Context, namespace, name string) (*api.ConfigMap, error) {
	return getRef[*api.ConfigMap](ctx, r, namespace, name)
}

func (r refs) Secret(ctx context.Context, namespace, name string) (*api.Secret, error) {
	return getRef[*api.Secret](ctx, r, namespace, name)
}

func (r refs) ClaimPath(ctx context.Context, namespace, claim string) (string, error) {
	pvc, err := getRef[*api.PersistentVolumeClaim](ctx, r, namespace, claim)
	if err != nil {
		return "", err
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != api.ClaimBound {
		return "", fmt.Errorf("persistentvolumeclaim %s/%s is not bound yet", namespace, claim)
	}
	pv, err := getRef[*api.PersistentVolume](ctx, r, "", pvc.Spec.VolumeName)
	if err != nil {
		return "", err
	}
	return claimDir(pv, r.a.cfg.NodeName)
}

// ServiceAccount reads a service account of a pod of this node.
func (r refs) ServiceAccount(ctx context.Context, namespace, name string) (*api.ServiceAccount, error) {
	return getRef[*api.ServiceAccount](ctx, r, namespace, name)
}

// ServiceAccountToken asks for a token of the pod's service account,
// bound to the pod; the agent rotates it well before it expires.
func (r refs) ServiceAccountToken(ctx context.Context, pod *api.Pod, audiences []string, expirationSeconds int64) (string, error) {
	c, err := r.client()
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(api.TokenRequest{Spec: api.TokenRequestSpec{
		Audiences:         audiences,
		ExpirationSeconds: &expirationSeconds,
		BoundObjectRef:    &api.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: string(pod.UID)},
	}})
	if err != nil {
		return "", err
	}
	path := client.ResourcePath(api.MustLookupResource("serviceaccounts"), pod.Namespace, pod.Spec.ServiceAccountName, "token")
	resp, err := c.Do(ctx, http.MethodPost, path, nil, body, "application/json")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var tr api.TokenRequest
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&tr); err != nil {
		return "", fmt.Errorf("decode token request: %w", err)
	}
	if tr.Status.Token == "" {
		return "", errors.New("the server issued no token")
	}
	return tr.Status.Token, nil
}

var (
	_ agentRuntime       = (*exec.Runtime)(nil)
	_ agentRuntime       = (*cri.Runtime)(nil)
	_ runtime.PodRuntime = (*cri.Runtime)(nil)
)
