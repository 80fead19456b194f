package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/agent"
	"github.com/berth-dev/berth/agent/pods"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/controlplane"
)

// serverOptions are the flags of `berth server` (SPEC §2) implemented so
// far.
type serverOptions struct {
	dataDir           string
	listen            string
	tlsSANs           []string
	store             string
	resetStore        bool
	etcd              controlplane.EtcdConfig
	advertiseAddress  string
	sources           []string
	webhookSecretFile string
	tokenAuthFile     string
	dns               controlplane.DNSConfig
	ingress           bool
	ingressListen     []string
	dnsRecursion      []string

	nodeMonitorPeriod        time.Duration
	nodeMonitorGracePeriod   time.Duration
	podEvictionTimeout       time.Duration
	terminatedPodGCThreshold int
	maxRequestsInflight      int
	maxMutatingInflight      int
	maxBytesInflight         int64
	eventTTL                 time.Duration
	scoringStrategy          string
	clusterCIDR              string
	nodeCIDRMaskSize         int
	serviceCIDR              string
	serviceNodePortRange     string

	// agent runs a node agent for this machine in the same process.
	agent bool
	// ui serves the web dashboard (--ui).
	ui bool
	agentFlags

	// cpuProfile and memProfile are hidden debugging flags: a CPU profile
	// of the whole run, a heap profile each time the server gets SIGUSR1.
	cpuProfile, memProfile string
}

func newServerCommand(g *globalOptions) *cobra.Command {
	o := &serverOptions{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the control plane",
		Long: `Run the control plane: the store, the HTTPS API and its credentials, and
the sources (--source) whose manifests it applies.

On first start the data dir receives a CA and serving certificate (tls/),
an admin token, a node join token (node-token), a service-account signing
key and admin.kubeconfig, which berth and kubectl read. A restart reuses
them.

Unless --agent=false it also runs an agent for this machine, whose pods
live under <data-dir>/agent; the data dir is then made mode 0711, so that
pods that run as other users (runAsUser) may pass through it to their
files. Passing through is all it allows: the server's files are private.

The state lives in memory, so the server runs Go's garbage collector at
GOGC=50 (the heap stays within about 1.5 times the state) unless GOGC is
set in the environment; GOMEMLIMIT sets a soft cap.

Several servers share one cluster with --store etcd://h1:2379,h2:2379:
the first to start puts its credentials into etcd and the others take
them (start each with an empty data dir, or its own earlier one), one is
elected leader, running the controllers, the scheduler and the sources,
and the others serve reads, watches and DNS from their own copy of the
state and send writes on to the leader. A leader that stops resigns
first, and another takes over at once; when it dies, within
--leader-elect-lease-duration (4s); a leader that loses the election
exits, to be started again as a follower. Give every server the
same --source flags, and agents an address that reaches any of them (a
load balancer, or DNS naming them all).

The data dir records the identity of its store (store-uid). A state.db
that is then missing or empty, or another store's, is refused, naming
the way back (berth snapshot restore); --reset-store starts an empty
store on purpose. Agents that joined the old store do not stop the pods
it ran for want of them in the new one, and say so.

Beside the API, the --listen address serves /livez, /readyz (?verbose
lists the checks: store, sources, and with an etcd store leader) and
/metrics (Prometheus: the API, store, controllers' work queues,
scheduler, sources and nodes, named berth_*) without a token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mostAllocated, err := controlplane.ParseScoringStrategy(o.scoringStrategy)
			if err != nil {
				return usageErrorf("--scheduler-scoring-strategy: %v", err)
			}
			if o.dns.RecursionNetworks, err = parsePrefixes(o.dnsRecursion); err != nil {
				return usageErrorf("--dns-recursion-networks: %v", err)
			}
			specs, err := controlplane.ParseSources(o.sources)
			if err != nil {
				return usageErrorf("--source: %v", err)
			}
			ingressConfig, err := o.ingressConfig(cmd.Flags().Changed("ingress-listen"))
			if err != nil {
				return err
			}
			cfg := controlplane.Config{
				DataDir:           o.dataDir,
				Listen:            o.listen,
				TLSSANs:           o.tlsSANs,
				Store:             o.store,
				ResetStore:        o.resetStore,
				Etcd:              o.etcdConfig(),
				AdvertiseAddress:  o.advertiseAddress,
				Version:           apiserver.VersionInfo{Version: version, Commit: commit, GoVersion: runtime.Version()},
				Logger:            g.logger,
				Sources:           specs,
				WebhookSecretFile: o.webhookSecretFile,
				TokenAuthFile:     o.tokenAuthFile,
				DNS:               &o.dns,
				Ingress:           ingressConfig,

				NodeMonitorPeriod:           o.nodeMonitorPeriod,
				NodeMonitorGracePeriod:      o.nodeMonitorGracePeriod,
				PodEvictionTimeout:          o.podEvictionTimeout,
				TerminatedPodGCThreshold:    gcThreshold(o.terminatedPodGCThreshold),
				EventTTL:                    o.eventTTL,
				MaxRequestsInflight:         inflightCap(o.maxRequestsInflight),
				MaxMutatingRequestsInflight: inflightCap(o.maxMutatingInflight),
				MaxBytesInflight:            inflightCap(o.maxBytesInflight),
				MostAllocated:               mostAllocated,
				ClusterCIDR:                 o.clusterCIDR,
				NodeCIDRMaskSize:            o.nodeCIDRMaskSize,
				ServiceCIDR:                 o.serviceCIDR,
				ServiceNodePortRange:        o.serviceNodePortRange,
				DisableUI:                   !o.ui,
			}
			if err := cfg.Check(); err != nil {
				return usageErrorf("%v", err)
			}
			var agentCfg agent.Config
			if o.agent {
				if agentCfg, err = o.agentFlags.config(); err != nil {
					return err
				}
			}
			tuneGC()
			s, err := controlplane.New(cmd.Context(), cfg)
			if err != nil {
				return failed(err)
			}
			if o.cpuProfile != "" {
				stop, err := startCPUProfile(o.cpuProfile)
				if err != nil {
					return failed(err)
				}
				defer stop()
			}
			if o.memProfile != "" {
				stop := heapProfileOnSignal(o.memProfile, g)
				defer stop()
			}
			if !o.agent {
				if err := s.Run(cmd.Context()); err != nil {
					return failed(err)
				}
				return nil
			}
			a, err := o.embeddedAgent(s, g, agentCfg)
			if err != nil {
				return err
			}
			return runServerAndAgent(cmd.Context(), s, a)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", defaultDataDir(), "store, CA, tokens, kubeconfig and volumes")
	f.StringVar(&o.listen, "listen", ":6443", "address of the HTTPS API")
	f.StringVar(&o.store, "store", controlplane.StoreBolt, "bolt (a file in the data dir), memory (nothing kept), or etcd://h1:2379,h2:2379 (shared by several servers, one of which leads)")
	f.BoolVar(&o.resetStore, "reset-store", false, "start an empty store on purpose where the data dir held one whose state.db is now missing or empty (or take the state.db of another store); without it the server refuses, and says how to restore a snapshot")
	f.StringVar(&o.etcd.CAFile, "etcd-cafile", "", "with an etcd store: the CA that signed etcd's certificate (TLS to etcd)")
	f.StringVar(&o.etcd.CertFile, "etcd-certfile", "", "with an etcd store: the client certificate to present to etcd")
	f.StringVar(&o.etcd.KeyFile, "etcd-keyfile", "", "with an etcd store: the client certificate's key")
	f.StringVar(&o.etcd.Prefix, "etcd-prefix", "/berth", "with an etcd store: the key prefix of the cluster's state (one etcd may hold several clusters)")
	f.DurationVar(&o.etcd.CompactionInterval, "etcd-compaction-interval", 5*time.Minute, "with an etcd store: how often the leader compacts etcd's history; 0 never does (etcd's --auto-compaction-retention then must)")
	f.DurationVar(&o.etcd.LeaseDuration, "leader-elect-lease-duration", controlplane.DefaultLeaseDuration, "with an etcd store: how long a leader that stopped renewing keeps its election (renewed every third of it), and so how soon another server takes over from one that died")
	f.DurationVar(&o.etcd.RenewDeadline, "leader-elect-renew-deadline", 0, "with an etcd store: how long the leader tries a write etcd does not answer before it gives up the lead (default two thirds of the lease duration; under it)")
	f.DurationVar(&o.etcd.RetryPeriod, "leader-elect-retry-period", controlplane.DefaultRetryPeriod, "with an etcd store: the longest wait between tries to campaign, to follow the log or to read the leader after etcd failed one")
	f.StringVar(&o.advertiseAddress, "advertise-address", "", "with an etcd store: the address the other servers reach this one's API at (default: the --listen host, or this machine's first address); the API's certificate covers it")
	f.StringSliceVar(&o.tlsSANs, "tls-san", nil, "further DNS names or IP addresses the API's certificate covers, beyond the listen host (or, listening on every address, this machine's addresses), the loopback names and the hostname; repeatable or comma-separated")
	f.StringArrayVar(&o.sources, "source", nil, "where desired state comes from: a directory or file, git+https://…, git+ssh://…, git+file://… (?ref=&path=&interval=&name=) or http(s)://…; repeatable")
	f.StringVar(&o.tokenAuthFile, "token-auth-file", "", "kube-apiserver's static token file: users who authenticate with a bearer token, one a line as token,user,uid,\"group1,group2\"; RBAC decides what they may do")
	f.StringVar(&o.webhookSecretFile, "webhook-secret-file", "", "file holding the HMAC secret of POST /hooks/<source>; none turns webhooks off")
	f.StringVar(&o.dns.Listen, "dns-listen", controlplane.DefaultDNSListen, "address of the cluster DNS server, UDP and TCP")
	f.StringVar(&o.dns.Upstream, "dns-upstream", "", "where names outside the cluster domain go (default: the nameservers of /etc/resolv.conf); none answers REFUSED")
	f.StringSliceVar(&o.dnsRecursion, "dns-recursion-networks", nil, "clients (CIDRs) for whom DNS forwards names outside the cluster domain; others are answered REFUSED for them (default: loopback, this machine's addresses and --cluster-cidr; 0.0.0.0/0,::/0 forwards for anyone)")
	f.StringVar(&o.dns.MetricsListen, "dns-metrics-listen", controlplane.DefaultDNSMetricsListen, "address of the DNS server's Prometheus /metrics")
	f.StringVar(&o.dns.HealthListen, "dns-health-listen", controlplane.DefaultDNSHealthListen, "address of the DNS server's /healthz")
	f.StringVar(&o.dns.Zone, "cluster-domain", controlplane.DefaultClusterDomain, "the cluster domain DNS answers for")
	f.BoolVar(&o.ingress, "ingress", true, "serve Ingresses of the berth class (the default IngressClass) with the built-in HTTP and HTTPS reverse proxy")
	f.StringSliceVar(&o.ingressListen, "ingress-listen", []string{controlplane.DefaultIngressHTTPListen, controlplane.DefaultIngressHTTPSListen}, "the Ingress proxy's HTTP and HTTPS addresses, HTTP,HTTPS (an empty one serves none); the defaults need root or CAP_NET_BIND_SERVICE, and without them the server runs with the proxy off and a warning")
	f.DurationVar(&o.nodeMonitorPeriod, "node-monitor-period", controlplane.DefaultNodeMonitorPeriod, "how often node heartbeats are checked")
	f.DurationVar(&o.nodeMonitorGracePeriod, "node-monitor-grace-period", controlplane.DefaultNodeMonitorGracePeriod, "no heartbeat for this long: node Ready=Unknown, taint node.kubernetes.io/unreachable")
	f.DurationVar(&o.podEvictionTimeout, "pod-eviction-timeout", controlplane.DefaultPodEvictionTimeout, "this long after a node is tainted unreachable or not-ready, its pods are deleted and recreated elsewhere by their controllers")
	f.IntVar(&o.terminatedPodGCThreshold, "terminated-pod-gc-threshold", controlplane.DefaultTerminatedPodGCThreshold, "finished pods kept before the oldest are deleted; 0 keeps them all")
	f.IntVar(&o.maxRequestsInflight, "max-requests-inflight", apiserver.DefaultMaxRequestsInflight, "the API's reads (get, list) in flight at once, across callers, beyond which it answers 429 with Retry-After; nodes, watches and streams are not counted; 0: no cap")
	f.IntVar(&o.maxMutatingInflight, "max-mutating-requests-inflight", apiserver.DefaultMaxMutatingRequestsInflight, "the API's writes in flight at once, across callers, beyond which it answers 429 with Retry-After; nodes' writes are not counted; 0: no cap")
	f.Int64Var(&o.maxBytesInflight, "max-bytes-inflight", apiserver.DefaultMaxBytesInflight, "the bytes of the API's answers being written at once, for reads and for writes each (a slow reader holds its answer's bytes until it has read them); an answer that cannot have its bytes within a second gets 429 with Retry-After, one larger than the whole bound is served alone; nodes' answers are not counted; 0: no bound")
	f.DurationVar(&o.eventTTL, "event-ttl", controlplane.DefaultEventTTL, "how long an event is kept after it was last recorded")
	f.StringVar(&o.scoringStrategy, "scheduler-scoring-strategy", controlplane.LeastAllocated, "how the scheduler scores nodes' free resources: LeastAllocated spreads pods over the emptiest nodes, MostAllocated packs them onto the fullest")
	f.StringVar(&o.clusterCIDR, "cluster-cidr", controlplane.DefaultClusterCIDR, "the range pod IPs come from: each node gets a spec.podCIDR of --node-cidr-mask-size bits out of it when it registers, freed when it goes; empty assigns none")
	f.StringVar(&o.serviceCIDR, "service-cidr", controlplane.DefaultServiceCIDR, "the range Services' virtual IPs (clusterIP) come from, or one IPv4 and one IPv6 range, comma-separated, for dual-stack; the kubernetes Service takes its first address")
	f.StringVar(&o.serviceNodePortRange, "service-node-port-range", controlplane.DefaultServiceNodePortRange, "the ports NodePort and LoadBalancer Services are given on every node, FIRST-LAST")
	f.IntVar(&o.nodeCIDRMaskSize, "node-cidr-mask-size", controlplane.DefaultNodeCIDRMaskSize, "the size in bits of each node's spec.podCIDR (24: 254 pod addresses a node)")
	f.BoolVar(&o.ui, "ui", true, "serve the web dashboard under /ui/ on the API's address; viewers log in with a bearer token and see what it may read")
	f.BoolVar(&o.agent, "agent", true, "run a node agent for this machine in the same process")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	_ = f.MarkHidden("cpuprofile")
	f.StringVar(&o.memProfile, "memprofile", "", "write a heap profile to this file each time the server gets SIGUSR1")
	_ = f.MarkHidden("memprofile")
	o.agentFlags.register(f, "agent-listen", "address of the embedded agent's HTTPS log server (default <node-ip>:10250)")
	return cmd
}

// ingressConfig is the Ingress flags as the control plane takes them;
// addresses left at their defaults are optional.
func (o *serverOptions) ingressConfig(changed bool) (*controlplane.IngressConfig, error) {
	if !o.ingress {
		return nil, nil
	}
	if len(o.ingressListen) != 2 {
		return nil, usageErrorf("--ingress-listen: want HTTP,HTTPS addresses (an empty one serves none), got %q", strings.Join(o.ingressListen, ","))
	}
	for _, a := range o.ingressListen {
		if a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, usageErrorf("--ingress-listen %q: %v", a, err)
		}
	}
	return &controlplane.IngressConfig{HTTPListen: o.ingressListen[0], HTTPSListen: o.ingressListen[1], Optional: !changed}, nil
}

// etcdConfig is the etcd flags as the control plane takes them: the
// compaction flag's 0 (never) is a negative interval there.
func (o *serverOptions) etcdConfig() controlplane.EtcdConfig {
	c := o.etcd
	if c.CompactionInterval == 0 {
		c.CompactionInterval = -1
	}
	return c
}

// embeddedAgent makes the agent `berth server` runs beside the control
// plane from cfg, its flags' config. It joins through the API like any
// other, at the address the API listens on (loopback when that is every
// address).
func (o *serverOptions) embeddedAgent(s *controlplane.Server, g *globalOptions, cfg agent.Config) (*agent.Agent, error) {
	creds := s.Credentials()
	cfg.Server = s.LocalURL()
	cfg.JoinToken = creds.NodeToken
	cfg.CAData = creds.CAPEM
	cfg.DataDir = filepath.Join(o.dataDir, "agent")
	cfg.Logger = g.logger.With("component", "agent")
	if cfg.ClusterDNS == "" {
		cfg.ClusterDNS = embeddedClusterDNS(o.dns.Listen)
	}
	// The agent's pods that run as another user (runAsUser) pass through
	// the server's data dir to their files. Passing through is all it
	// allows: what the server keeps there is 0600, its tls/ 0700.
	if err := os.Chmod(o.dataDir, pods.DataDirMode); err != nil {
		return nil, failed(fmt.Errorf("agent: data dir: %w", err))
	}
	a, err := agent.New(cfg)
	if err != nil {
		return nil, failed(fmt.Errorf("agent: %w (--agent=false runs the control plane alone)", err))
	}
	return a, nil
}

// embeddedClusterDNS is where the embedded agent's node-local DNS
// forwarder reaches this server's DNS (--dns-listen): its host, or
// loopback when it listens on every address; empty (the agent's default)
// when the address does not parse.
func embeddedClusterDNS(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// runServerAndAgent runs both until ctx ends or one fails, which stops the
// other.
func runServerAndAgent(ctx context.Context, s *controlplane.Server, a *agent.Agent) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	agentErr := make(chan error, 1)
	go func() {
		err := a.Run(ctx)
		if err != nil {
			cancel()
		}
		agentErr <- err
	}()
	serr := s.Run(ctx)
	cancel()
	aerr := <-agentErr
	switch {
	case serr != nil:
		return failed(serr)
	case aerr != nil:
		return failed(fmt.Errorf("agent: %w", aerr))
	}
	return nil
}

// gcThreshold turns --terminated-pod-gc-threshold into the control plane's
// setting, where zero means the default: the flag's 0 (keep every finished
// pod) becomes -1.
// inflightCap turns a --max-*-inflight flag (0: no cap, as in
// kube-apiserver) into the control plane's setting (negative: no cap).
func inflightCap[N int | int64](n N) N {
	if n <= 0 {
		return -1
	}
	return n
}

func gcThreshold(flag int) int {
	if flag <= 0 {
		return -1
	}
	return flag
}

// heapProfileOnSignal writes a heap profile to path each time the process
// gets SIGUSR1, until stop is called: the live heap of a running server,
// which a profile taken at exit no longer shows.
func heapProfileOnSignal(path string, g *globalOptions) (stop func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-sig:
				if err := writeHeapProfile(path); err != nil {
					g.logger.Error("heap profile", "err", err)
				}
			}
		}
	})
	return func() {
		signal.Stop(sig)
		close(done)
		wg.Wait()
	}
}

// parsePrefixes parses CIDRs, or a bare address as the network of it
// alone; none is nil.
func parsePrefixes(vs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range vs {
		v = strings.TrimSpace(v)
		if a, err := netip.ParseAddr(v); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
