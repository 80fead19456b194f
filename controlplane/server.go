package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/apiserver/rbac"
	"github.com/berth-dev/berth/controlplane/agentproxy"
	"github.com/berth-dev/berth/controlplane/pki"
	"github.com/berth-dev/berth/dns"
	"github.com/berth-dev/berth/ingress"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/apply"
	"github.com/berth-dev/berth/reconcile/event"
	ingressctl "github.com/berth-dev/berth/reconcile/ingress"
	"github.com/berth-dev/berth/reconcile/job"
	"github.com/berth-dev/berth/reconcile/limitrange"
	"github.com/berth-dev/berth/reconcile/namespace"
	"github.com/berth-dev/berth/reconcile/node"
	"github.com/berth-dev/berth/reconcile/podgc"
	"github.com/berth-dev/berth/reconcile/priority"
	"github.com/berth-dev/berth/reconcile/quota"
	"github.com/berth-dev/berth/reconcile/servicealloc"
	"github.com/berth-dev/berth/reconcile/volume"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/bolt"
	"github.com/berth-dev/berth/store/etcd"
	"github.com/berth-dev/berth/store/informer"
	"github.com/berth-dev/berth/ui"
)

// Store kinds accepted by --store.
const (
	StoreBolt   = "bolt"
	StoreMemory = "memory"
)

// StoreFile is the bolt file in the data dir.
const StoreFile = "state.db"

// Defaults of the node lifecycle and pod garbage collection flags (SPEC §2),
// for the commands that define them.
const (
	DefaultNodeMonitorPeriod        = node.DefaultMonitorPeriod
	DefaultNodeMonitorGracePeriod   = node.DefaultGracePeriod
	DefaultPodEvictionTimeout       = node.DefaultEvictionTimeout
	DefaultTerminatedPodGCThreshold = podgc.DefaultThreshold
	DefaultEventTTL                 = event.DefaultTTL
)

// Config says how to run a control plane. Zero fields take the defaults of
// SPEC §2.
type Config struct {
	// DataDir holds the store, the credentials and admin.kubeconfig.
	DataDir string
	// Listen is the HTTPS API address (default ":6443").
	Listen string
	// TLSSANs are further DNS names and IP addresses the serving
	// certificate covers (--tls-san): a load balancer's name, an address
	// that reaches this machine through NAT. Beside them it covers the
	// listen host, or, when the listen address names none, every address
	// of this machine's interfaces; and the loopback names and hostname.
	TLSSANs []string
	// Store is "bolt" (default), "memory", or "etcd://h1:2379,…": the
	// store shared by several control planes, of which one leads (runs
	// the controllers, the scheduler and the sources, and writes) and the
	// others serve reads, watches and DNS from their own copy and send
	// writes to the leader, until one of them takes over.
	Store string
	// Etcd tunes the etcd store.
	Etcd EtcdConfig
	// ResetStore starts an empty bolt store on purpose where the data dir
	// held one whose file is now missing or empty, or takes the store
	// state.db holds though the data dir held another (--reset-store);
	// without it either is refused (see StoreUIDFile).
	ResetStore bool
	// AdvertiseAddress is where the other control planes of an etcd
	// store reach this one's API (--advertise-address): by default the
	// listen host, or, when the listen address names none, this
	// machine's first address.
	AdvertiseAddress string
	Version          apiserver.VersionInfo
	Logger           *slog.Logger
	Clock            clock.WithTickerAndDelayedExecution
	// Sources are the --source flags: where desired state comes from.
	Sources []source.Spec
	// TokenAuthFile is kube-apiserver's static token file
	// (token,user,uid,"groups"): users who authenticate with those
	// bearer tokens. Empty for none.
	TokenAuthFile string
	// WebhookSecretFile holds the secret of POST /hooks/<source>; none
	// turns webhooks off (403).
	WebhookSecretFile string
	// DNS configures the cluster DNS server; nil runs none.
	DNS *DNSConfig
	// Ingress configures the built-in Ingress proxy; nil runs none.
	Ingress *IngressConfig
	// NodeMonitorPeriod, NodeMonitorGracePeriod and PodEvictionTimeout time
	// the node lifecycle controller (--node-monitor-period, 5s;
	// --node-monitor-grace-period, 40s; --pod-eviction-timeout, 5s); zero
	// takes the default.
	NodeMonitorPeriod      time.Duration
	NodeMonitorGracePeriod time.Duration
	PodEvictionTimeout     time.Duration
	// TerminatedPodGCThreshold is how many finished pods are kept before the
	// oldest are deleted (--terminated-pod-gc-threshold); zero takes the
	// default 12500, a negative value keeps them all.
	TerminatedPodGCThreshold int
	// EventTTL is how long an event is kept after it was last recorded
	// (--event-ttl); zero takes the default, one hour.
	EventTTL time.Duration
	// MaxRequestsInflight and MaxMutatingRequestsInflight cap the API's
	// reads and writes in flight (--max-requests-inflight,
	// --max-mutating-requests-inflight); zero takes the defaults, 400
	// and 200, a negative value sets no cap.
	MaxRequestsInflight         int
	MaxMutatingRequestsInflight int
	// MaxBytesInflight bounds the bytes of the API's answers being
	// written at once, for reads and for writes each; 0: the API
	// server's default, negative: no bound.
	MaxBytesInflight int64
	// MostAllocated makes the scheduler pack pods onto the fullest nodes
	// rather than spread them (--scheduler-scoring-strategy MostAllocated).
	MostAllocated bool
	// ClusterCIDR is the range every Node's spec.podCIDR is cut from
	// (--cluster-cidr), in ranges of NodeCIDRMaskSize bits
	// (--node-cidr-mask-size; zero takes 24). Empty assigns none.
	ClusterCIDR      string
	NodeCIDRMaskSize int
	// ServiceCIDR is the range (or one of each family, comma-separated)
	// Services' virtual IPs come from (--service-cidr, 10.43.0.0/16 when
	// empty); ServiceNodePortRange the node ports'
	// (--service-node-port-range, 30000-32767 when empty).
	ServiceCIDR          string
	ServiceNodePortRange string
	// DisableUI turns the web dashboard under /ui/ off (--ui=false).
	DisableUI bool
}

// Server is a control plane: open, listening, not yet serving until Run.
type Server struct {
	cfg      Config
	log      *slog.Logger
	store    *store.Store
	creds    *pki.Credentials
	api      *apiserver.Server
	listener net.Listener
	sources  *sources
	hookKey  []byte
	// branchPlans plans the branches webhooks name that no Source syncs.
	branchPlans *branchPlans
	dns         *dns.Server
	// ingress is the Ingress proxy, nil when it is off.
	ingress *ingress.Server
	// informers are the one list and watch of each kind that the
	// controllers, the scheduler and DNS share; Run runs them.
	informers *informer.Factory
	// controllers and scheduler run while the server leads, each until
	// it ends; each runs once, so a server that leads again after it
	// stepped down builds them anew. leaderMu guards them for /metrics.
	leaderMu    sync.Mutex
	controllers []*reconcile.Controller
	scheduler   *sched.Scheduler
	// events writes the events of the controllers and the scheduler.
	events *event.Writer
	// registry is what /metrics serves; ctrlMetrics instruments every
	// controller's queue and reconciles in it.
	registry    *prometheus.Registry
	ctrlMetrics *reconcile.Metrics
	// dbSize is the bolt file's size, for /metrics; nil for a memory store.
	dbSize func() (int64, error)
	// backend is the store's durable backend, which SnapshotPath copies.
	backend store.Backend
	// agents proxies pods/log, pods/exec, pods/attach and
	// pods/portforward to agents and gathers their resource metrics; Run
	// ends its streams at shutdown.
	agents *agentproxy.Proxy
	// etcd is the backend of an etcd store, nil for the others; forward
	// sends a follower's writes to the leader, and advertise is the URL
	// this control plane announces when it leads.
	etcd      *etcd.Backend
	forward   *forwarder
	advertise string
	// leading is closed once this control plane leads: at once for a
	// store of its own, once elected and caught up over an etcd store.
	leading     chan struct{}
	leadingOnce sync.Once
	// ui is the web dashboard under /ui/, nil when it is off; Run ends
	// its streams at shutdown.
	ui *ui.Server
	// svcAlloc gives Services their virtual IPs and node ports, in the
	// store's transactions.
	svcAlloc *servicealloc.Allocator
}

// New opens the store and credentials and binds the API listener, so that
// errors (a store held by another process, a port in use) surface before
// Run.
func New(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg.DataDir == "" {
		return nil, errors.New("control plane: no data dir")
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	ensure := func() (*pki.Credentials, error) {
		server, servers, err := adminServers(cfg)
		if err != nil {
			return nil, err
		}
		return pki.EnsureCredentials(cfg.DataDir, pki.Options{Listen: cfg.Listen, ServerURL: server, Servers: servers,
			ExtraSANs: servingAddresses(cfg, interfaceAddrs), Clock: cfg.Clock})
	}
	// undo closes, newest first, what New opened when a later step fails.
	var undo cleanups
	defer func() {
		if err != nil {
			undo.run()
		}
	}()
	var (
		creds   *pki.Credentials
		backend store.Backend
		eb      *etcd.Backend
		st      *store.Store
	)
	// The store, once open, closes its backend.
	undo.push(func() {
		if st != nil {
			st.Close()
		} else if backend != nil {
			backend.Close()
		}
	})
	if strings.HasPrefix(cfg.Store, StoreEtcdScheme) {
		if err := checkNoBoltStore(cfg.DataDir, cfg.Store); err != nil {
			return nil, err
		}
		if eb, err = openEtcd(ctx, cfg); err != nil {
			return nil, err
		}
		backend = eb
		if creds, err = shareCredentials(ctx, eb.Client(), eb.Prefix()+etcd.BootstrapKey, pki.PathsIn(cfg.DataDir), cfg.Logger, ensure); err != nil {
			return nil, err
		}
	} else {
		if err := checkNotServedEtcd(cfg.DataDir); err != nil {
			return nil, err
		}
		if creds, err = ensure(); err != nil {
			return nil, err
		}
		if backend, err = openBackend(cfg); err != nil {
			return nil, err
		}
	}
	svcAlloc, err := cfg.serviceAllocator()
	if err != nil {
		return nil, err
	}
	if st, err = store.New(backend, store.Options{Clock: cfg.Clock, Logger: cfg.Logger, Admit: []store.AdmitFunc{namespace.Admit, volume.AdmitDefaultClass, volume.AdmitProtection, volume.AdmitResize, priority.Admit, ingressctl.Admit, limitrange.Admit, quota.Admit, job.Admit, svcAlloc.Admit}}); err != nil {
		return nil, damagedStoreAdvice(err, cfg.DataDir)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, store: st, creds: creds, backend: backend, ctrlMetrics: reconcile.NewMetrics(), etcd: eb, leading: make(chan struct{}), svcAlloc: svcAlloc,
		informers: informer.NewFactory(st, cfg.Clock, cfg.Logger)}
	if b, ok := backend.(*bolt.Backend); ok {
		s.dbSize = b.Size
	}
	s.events = event.NewWriter(st, event.Options{Clock: cfg.Clock, Logger: cfg.Logger})
	if !st.Replicated() {
		// A store of its own: this control plane leads from the start.
		// An etcd store's leader does this once it is elected.
		if err := s.bootstrap(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.setupSources(ctx); err != nil {
		return nil, err
	}
	if err := s.buildAPI(); err != nil {
		return nil, err
	}
	if err := s.buildLeader(ctx); err != nil {
		return nil, err
	}
	if err := s.registry.Register(schedulerCollector{s}); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	if cfg.DNS != nil {
		opts := cfg.DNS.options()
		opts.Clock, opts.Logger, opts.Informers = cfg.Clock, cfg.Logger, s.informers
		if opts.RecursionNetworks == nil {
			opts.RecursionNetworks = recursionNetworks(cfg.ClusterCIDR)
		}
		d, err := dns.New(st, opts)
		if err != nil {
			return nil, fmt.Errorf("dns: %w", err)
		}
		s.dns = d
		undo.push(func() { d.Close() })
	}
	if err := s.setupIngress(); err != nil {
		return nil, err
	}
	if s.ingress != nil {
		undo.push(s.ingress.Close)
	}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	s.listener = l
	if !cfg.DisableUI {
		// The dashboard reads through the API as each viewer, over
		// loopback to the address just bound.
		u, err := ui.New(ui.Config{API: s.LocalURL(), CAData: creds.CAPEM, Clock: cfg.Clock, Logger: cfg.Logger})
		if err != nil {
			l.Close()
			return nil, err
		}
		s.ui = u
		s.api.Handle(ui.Prefix, u, false)
	}
	if st.Replicated() {
		s.advertise = advertiseURL(cfg, l.Addr(), interfaceAddrs)
		s.forward.self = s.advertise
	}
	return s, nil
}

// advertiseURL is where the other control planes reach this one's API:
// --advertise-address, else the listen host, else this machine's first
// address, else loopback; always at the listen port.
func advertiseURL(cfg Config, addr net.Addr, addrs func() []string) string {
	_, port, _ := net.SplitHostPort(addr.String())
	host := cfg.AdvertiseAddress
	if host == "" {
		if h, _, err := net.SplitHostPort(cfg.Listen); err == nil && h != "" {
			if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
				host = h
			}
		}
	}
	if host == "" {
		if as := addrs(); len(as) > 0 {
			host = as[0]
		} else {
			host = "127.0.0.1"
		}
	}
	return "https://" + net.JoinHostPort(strings.Trim(host, "[]"), port)
}

// adminServers are the server admin.kubeconfig names and the further
// servers it lists for berth. One of several servers on an etcd given a
// --tls-san names the first, at the listen port: the stable address of
// the cluster (a load balancer's, or a DNS name of every server), which
// kubectl, taking one URL, needs, and which each server then writes
// alike; and lists itself after it, so that berth on this machine
// reaches its own server when that address does not answer. Otherwise
// (one server, or no name given) it names this server alone (""; see
// pki.Options.ServerURL).
func adminServers(cfg Config) (string, []string, error) {
	if !strings.HasPrefix(cfg.Store, StoreEtcdScheme) || len(cfg.TLSSANs) == 0 {
		return "", nil, nil
	}
	listen := cfg.Listen
	if listen == "" {
		listen = ":6443"
	}
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", nil, fmt.Errorf("listen address %q: %w", listen, err)
	}
	local, err := pki.DefaultServerURL(listen)
	if err != nil {
		return "", nil, err
	}
	return "https://" + net.JoinHostPort(strings.Trim(cfg.TLSSANs[0], "[]"), port), []string{local}, nil
}

// Check finds what is wrong with the flags behind cfg without touching
// anything: an unknown --store, two sources of one name. New calls it
// first, and `berth server` before New, so that bad usage creates no data
// dir and exits 2.
func (cfg Config) Check() error {
	if err := checkStore(cfg.Store); err != nil {
		return err
	}
	if err := cfg.Etcd.check(strings.HasPrefix(cfg.Store, StoreEtcdScheme)); err != nil {
		return err
	}
	for _, san := range cfg.TLSSANs {
		if !isHost(san) {
			return fmt.Errorf("--tls-san %q: want an IP address or a DNS name", san)
		}
	}
	if cfg.AdvertiseAddress != "" && !isHost(cfg.AdvertiseAddress) {
		// The leader announces it with the listen port: a port or a
		// scheme in it makes a URL no follower can dial.
		return fmt.Errorf("--advertise-address %q: want an IP address or a DNS name, without a port", cfg.AdvertiseAddress)
	}
	if _, err := cfg.nodeRange(); err != nil {
		return err
	}
	if _, err := cfg.serviceAllocator(); err != nil {
		return err
	}
	return source.CheckNames(cfg.Sources)
}

// isHost tells an IP address (IPv6 bracketed or not) or a DNS name.
func isHost(v string) bool {
	return net.ParseIP(strings.Trim(v, "[]")) != nil || len(validation.IsDNS1123Subdomain(strings.ToLower(v))) == 0
}

// servingAddresses are the names the serving certificate covers beyond
// the listen host, loopback and hostname (see Config.TLSSANs): the
// --tls-san values and, when the listen address names no host, the
// addresses addrs finds on this machine's interfaces, so that an agent
// elsewhere may dial any of them.
func servingAddresses(cfg Config, addrs func() []string) []string {
	out := slices.Clone(cfg.TLSSANs)
	if cfg.AdvertiseAddress != "" {
		out = append(out, strings.Trim(cfg.AdvertiseAddress, "[]"))
	}
	if host, _, err := net.SplitHostPort(cfg.Listen); err == nil {
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			out = append(out, addrs()...)
		}
	}
	return out
}

// interfaceAddrs lists the global unicast addresses of this machine's
// interfaces (not loopback, not link-local).
func interfaceAddrs() []string {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
			out = append(out, n.IP.String())
		}
	}
	return out
}

// checkStore accepts the --store values this version can open ("" is the
// default, bolt).
func checkStore(v string) error {
	switch {
	case v == "" || v == StoreBolt || v == StoreMemory:
		return nil
	case strings.HasPrefix(v, StoreEtcdScheme):
		_, err := etcdEndpoints(v)
		return err
	}
	return fmt.Errorf("--store %q: want bolt, memory or etcd://host:port,…", v)
}

// openBackend opens the store cfg names, which Check accepted.
func openBackend(cfg Config) (store.Backend, error) {
	if cfg.Store == StoreMemory {
		if err := checkNoBoltStore(cfg.DataDir, cfg.Store); err != nil {
			return nil, err
		}
		return store.Memory{}, nil
	}
	b, err := openBolt(cfg.DataDir, cfg.ResetStore, cfg.Logger)
	if err != nil {
		return nil, err // not a nil *bolt.Backend in a Backend that is not nil
	}
	return b, nil
}

// bootstrap creates what must exist from the start: the namespaces
// default, kube-system, kube-public and kube-node-lease, the default
// StorageClass and the system PriorityClasses.
func (s *Server) bootstrap(ctx context.Context) error {
	if _, err := s.store.Get(api.MustLookupResource("namespaces"), "", api.NamespaceDefault); err != nil {
		// A store without the default namespace is new: it gets the class.
		if err := s.bootstrapStorageClass(ctx); err != nil {
			return err
		}
	}
	// The system namespaces are made again at every start, as Kubernetes'
	// API server does, so that a store from before one existed gets it.
	for _, name := range []string{api.NamespaceDefault, api.NamespaceSystem, api.NamespacePublic, api.NamespaceNodeLease} {
		ns := &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		api.Default(ns)
		if _, err := s.store.Create(ctx, ns); err != nil && !store.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
	}
	// The system PriorityClasses, made again at every start as well.
	if err := priority.Bootstrap(ctx, s.store); err != nil {
		return err
	}
	// The berth IngressClass, the default one, where the proxy runs.
	if s.cfg.Ingress != nil {
		if err := ingressctl.Bootstrap(ctx, s.store); err != nil {
			return err
		}
	}
	// The default ClusterRoles and bindings, reconciled at every start
	// as kube-apiserver does.
	return rbac.Bootstrap(ctx, s.store)
}

// bootstrapStorageClass creates the default StorageClass local-path in a
// new store; one a user changed or deleted later is left alone.
func (s *Server) bootstrapStorageClass(ctx context.Context) error {
	if _, err := s.store.Create(ctx, volume.DefaultClass()); err != nil && !store.IsAlreadyExists(err) {
		return fmt.Errorf("create storageclass %s: %w", volume.DefaultClassName, err)
	}
	return nil
}

// setupSources makes the configured sources and their Source objects, and
// reads the webhook secret.
func (s *Server) setupSources(ctx context.Context) error {
	if f := s.cfg.WebhookSecretFile; f != "" {
		key, err := ReadWebhookSecret(f)
		if err != nil {
			return err
		}
		s.hookKey = key
	}
	srcs, err := newSources(s.cfg.Sources, s.store, s.cfg.DataDir, s.cfg.Clock, s.log, s.events.Recorder(apply.EventComponent, ""))
	if err != nil {
		return err
	}
	srcs.sched = sched.FrameworkOptions{MostAllocated: s.cfg.MostAllocated}
	s.sources = srcs
	if s.store.Replicated() {
		return nil // the leader's, once elected
	}
	return srcs.ensureObjects(ctx)
}

func (s *Server) buildAPI() error {
	signer, err := auth.NewSigner(s.creds.SigningKey)
	if err != nil {
		return err
	}
	registry, err := newRegistry(s.events, s.ctrlMetrics, newStateMetrics(s.store, s.sources, s.dbSize))
	if err != nil {
		return err
	}
	s.registry = registry
	authz := auth.NewAuthorizer(s.store)
	checks := []apiserver.ReadyCheck{{Name: "store", Check: s.store.Err}, {Name: "sources", Check: s.sources.Ready}}
	// The certificate this control plane presents to agents and, over
	// etcd, to the other control planes it forwards writes to.
	clientCert, err := pki.EnsureAPIServerClientCert(s.creds, s.cfg.Clock)
	if err != nil {
		return err
	}
	// Agents' serving certificates come from the node CA alone, which
	// signs them at join.
	issuer, err := pki.NewNodeCertIssuer(s.creds, s.cfg.Clock)
	if err != nil {
		return err
	}
	var forward func(*http.Request) http.Handler
	if s.store.Replicated() {
		s.forward = newForwarder(s.store, "", s.creds.CAPool, clientCert, s.log, s.cfg.Clock)
		forward = s.forward.route
		checks = append(checks, apiserver.ReadyCheck{Name: "leader", Check: s.forward.known})
	}
	authn := auth.NewAuthenticator(s.store, s.creds.AdminToken, signer)
	if f := s.cfg.TokenAuthFile; f != "" {
		file, err := os.Open(f)
		if err != nil {
			return fmt.Errorf("--token-auth-file: %w", err)
		}
		users, err := auth.ReadTokenFile(f, file)
		file.Close()
		if err != nil {
			return err
		}
		authn.WithStaticTokens(users)
	}
	a, err := apiserver.New(apiserver.Config{
		Registry:      registry,
		Store:         s.store,
		Authenticator: authn,
		Authorizer:    authz,
		Version:       s.cfg.Version,
		ReadyChecks:   checks,
		Forward:       forward,
		// Another control plane passes on writes with the client
		// certificate it also presents to agents.
		ProxyClientName: api.APIServerClientName,

		MaxRequestsInflight:         s.cfg.MaxRequestsInflight,
		MaxMutatingRequestsInflight: s.cfg.MaxMutatingRequestsInflight,
		MaxBytesInflight:            s.cfg.MaxBytesInflight,
		Admission: []apiserver.AdmissionPlugin{
			apiserver.AdmissionFunc(func(ctx context.Context, a auth.Attributes, id *auth.Identity) error {
				return auth.MirrorPodGuard(ctx, id, a)
			}),
			apiserver.AdmissionFunc(s.sources.guard),
			apiserver.AdmissionFunc(authz.EscalationGuard),
		},
		Logger: s.log,
		Clock:  s.cfg.Clock,
	})
	if err != nil {
		return err
	}
	a.HandleSubresource(api.MustLookupResource("serviceaccounts"), auth.SubresourceToken, apiserver.TokenRequestHandler(s.store, signer))
	a.HandleSubresource(api.KindOf(&api.Source{}), SubresourceDiff, s.sources.serveDiff(authz))
	a.HandlePublic(auth.JWKSPath, apiserver.JWKSHandler(signer))
	a.HandlePublic(auth.OIDCDiscoveryPath, apiserver.OIDCDiscoveryHandler(signer))
	s.agents = agentproxy.New(s.store, s.creds.NodeCAPool, clientCert, s.log)
	if err := s.agents.Register(a, authz); err != nil {
		return err
	}
	a.Handle(apiserver.JoinPath, apiserver.JoinHandler(apiserver.JoinConfig{
		JoinToken: s.creds.NodeToken, Signer: signer, Issue: issuer.Issue, Store: s.store, Authenticator: authn,
	}), false)
	a.Handle(SnapshotPath, &snapshotHandler{backend: s.backend}, true)
	a.Handle(api.StorePath, storeInfoHandler{store: s.store}, true)
	planner := &planHandler{store: s.store, sources: s.sources, dataDir: s.cfg.DataDir, sched: s.sources.sched}
	a.Handle(api.PlanPath, planner, true)
	hook := newWebhook(s.hookKey, s.sources.Trigger, s.log, s.cfg.Clock)
	s.branchPlans = &branchPlans{handler: planner, notify: s.sources.notify, clock: s.cfg.Clock, log: s.log}
	hook.plans = s.branchPlans
	a.Handle(HooksPath, hook, false)
	s.api = a
	return nil
}

// Addr is the address the API listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// LocalURL is the URL a client on this machine dials to reach the API:
// the listen host when the server listens on one address, loopback when
// it listens on every address.
func (s *Server) LocalURL() string {
	u, _ := pki.DefaultServerURL(s.Addr().String()) // a bound address always splits
	return u
}

// Store is the control plane's store, for in-process users such as
// `berth sim`.
func (s *Server) Store() *store.Store { return s.store }

// API is the server's API server, for tests that check what it routes.
func (s *Server) API() *apiserver.Server { return s.api }

// UI is the web dashboard, nil when it is off.
func (s *Server) UI() *ui.Server { return s.ui }

// Credentials are the server's credentials.
func (s *Server) Credentials() *pki.Credentials { return s.creds }

// Run serves until ctx is done, then shuts the API down gracefully (ending
// watches) and closes the store.
func (s *Server) Run(ctx context.Context) error {
	tlsConfig := &tls.Config{
		Certificates: []tls.Certificate{s.creds.ServingCert},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
		// A user may come with a client certificate the cluster CA
		// signed (berth token create-user), as to kube-apiserver.
		ClientAuth: tls.VerifyClientCertIfGiven,
		ClientCAs:  s.creds.CAPool,
	}
	s.log.Info("berth server listening", "addr", s.listener.Addr().String(), "store", s.cfg.Store,
		"kubeconfig", s.creds.Paths.AdminKubeconfig)
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.api.Serve(s.listener, tlsConfig) }()
	runCtx, stop := context.WithCancel(ctx)
	s.informers.Start(runCtx)
	var wg sync.WaitGroup
	if s.dns != nil {
		wg.Go(func() {
			if err := s.dns.Run(runCtx); err != nil {
				s.log.Error("dns server stopped", "err", err)
			}
		})
	}
	if s.ingress != nil {
		wg.Go(func() {
			if err := s.ingress.Run(runCtx); err != nil {
				s.log.Error("ingress proxy stopped", "err", err)
			}
		})
	}
	leadErr := make(chan error, 1)
	if s.store.Replicated() {
		wg.Go(func() { s.etcd.ObserveLeader(runCtx, s.forward.setLeader) })
		wg.Go(func() {
			if err := s.leadTerms(runCtx); err != nil && runCtx.Err() == nil {
				leadErr <- err
			}
		})
	} else {
		s.runLeader(runCtx, &wg)
	}
	var err error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down", "reason", context.Cause(ctx))
	case err = <-serveErr:
		s.log.Info("shutting down", "reason", err)
	case err = <-leadErr:
		s.log.Error("shutting down", "reason", err)
	}
	stop()
	wg.Wait()
	s.sources.closeAll()
	resigned := s.etcd != nil && err == nil
	if resigned {
		// Hand over once the controllers have stopped writing, before
		// the API drains: another server is elected now, not when this
		// one's lease runs out, and the writes this one still gets are
		// refused as not the leader's (503, sent on by the client).
		s.etcd.Resign()
	}
	s.informers.Wait()
	s.agents.Close()
	if s.ui != nil {
		s.ui.Close()
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if serr := s.api.Shutdown(shutdownCtx); serr != nil && err == nil {
		err = serr
	}
	if cerr := s.store.Close(); cerr != nil && err == nil && !(resigned && errors.Is(cerr, store.ErrNotLeader)) {
		// A write refused after the resignation is no failure.
		err = cerr
	}
	return err
}

// leadTerms campaigns for the leadership of an etcd store, leads until
// it is lost, then steps down and campaigns again, until ctx ends. A
// deposed leader does not exit, as kube-controller-manager does: it stops
// its controllers, its scheduler and its sources, forgets what it wrote
// that etcd did not take, and goes on serving as a follower of the new
// leader, sending writes on to it; its leader metric is 0 from the moment
// it knows.
func (s *Server) leadTerms(ctx context.Context) error {
	for term := 1; ; term++ {
		if term > 1 {
			// Each runs once: a new term gets its own.
			if err := s.buildLeader(ctx); err != nil {
				return err
			}
		}
		if err := s.lead(ctx); err != nil {
			return err
		}
		lost := s.store.Lost()
		termCtx, end := context.WithCancel(ctx)
		var running sync.WaitGroup
		s.runLeader(termCtx, &running)
		select {
		case <-lost:
			s.log.Warn("stepping down: leadership lost; following the new leader")
		case <-ctx.Done():
		}
		end()
		running.Wait()
		s.sources.closeAll()
		if ctx.Err() != nil {
			return nil
		}
		if err := s.store.StepDown(); err != nil {
			return fmt.Errorf("step down: %w", err)
		}
		s.forward.wake()
	}
}

// buildLeader makes what only the leader runs: the scheduler and the
// controllers, instrumented in /metrics.
func (s *Server) buildLeader(ctx context.Context) error {
	cfg := s.cfg
	sc := sched.New(s.store, sched.Options{Clock: cfg.Clock, Logger: cfg.Logger, MostAllocated: cfg.MostAllocated, Informers: s.informers,
		Events: s.events.Recorder(api.DefaultSchedulerName, ""), Volumes: volume.NewFilter(s.store)})
	deps := Deps{Config: cfg, Store: s.store, Informers: s.informers, Clock: cfg.Clock, Log: cfg.Logger, Events: s.events, Scheduler: sc, Sources: s.sources,
		IngressAddresses: s.ingressAddresses}
	if s.agents != nil {
		deps.Metrics = s.agents
	}
	cs, err := buildControllers(ctx, controllerInits, deps)
	if err != nil {
		return err
	}
	for _, c := range cs {
		s.ctrlMetrics.Instrument(c)
	}
	s.leaderMu.Lock()
	s.scheduler, s.controllers = sc, cs
	s.leaderMu.Unlock()
	return nil
}

// schedulerCollector serves the metrics of the server's scheduler of the
// moment, which a new term replaces.
type schedulerCollector struct{ s *Server }

func (c schedulerCollector) current() prometheus.Collector {
	c.s.leaderMu.Lock()
	defer c.s.leaderMu.Unlock()
	return c.s.scheduler.Collector()
}

// Describe implements prometheus.Collector.
func (c schedulerCollector) Describe(ch chan<- *prometheus.Desc) { c.current().Describe(ch) }

// Collect implements prometheus.Collector.
func (c schedulerCollector) Collect(ch chan<- prometheus.Metric) { c.current().Collect(ch) }

// lead campaigns for the leadership of an etcd store, and once elected
// and caught up, makes what a store must hold from the start and the
// Source objects of the --source flags.
func (s *Server) lead(ctx context.Context) error {
	s.log.Info("campaigning for leader", "advertise", s.advertise)
	if err := s.store.Lead(ctx, s.advertise); err != nil {
		return err
	}
	// The writes held for a leader that is this control plane are
	// served here now.
	s.forward.wake()
	s.log.Info("leading the cluster", "advertise", s.advertise, "revision", s.store.Revision())
	if err := s.bootstrap(ctx); err != nil {
		return err
	}
	return s.sources.ensureObjects(ctx)
}

// Leading is closed once this control plane leads the cluster and runs
// its controllers: once Run has started, for a store of its own; once
// elected and caught up, over an etcd store.
func (s *Server) Leading() <-chan struct{} { return s.leading }

// runLeader starts what only the leader runs, each until ctx ends: the
// sources, the event writer, the controllers and the scheduler.
func (s *Server) runLeader(ctx context.Context, wg *sync.WaitGroup) {
	defer s.leadingOnce.Do(func() { close(s.leading) })
	s.leaderMu.Lock()
	controllers, scheduler := s.controllers, s.scheduler
	s.leaderMu.Unlock()
	wg.Go(func() { s.events.Run(ctx) })
	wg.Go(func() { s.sources.notify.Run(ctx) })
	wg.Go(func() { s.branchPlans.Run(ctx) })
	wg.Go(func() { s.runKubernetesService(ctx) })
	for _, c := range controllers {
		wg.Go(func() {
			if err := c.Run(ctx, 2); err != nil {
				s.log.Error("controller stopped", "controller", c.Name(), "err", err)
			}
		})
	}
	wg.Go(func() {
		if err := scheduler.Run(ctx); err != nil {
			s.log.Error("scheduler stopped", "err", err)
		}
	})
}

// newRegistry is what the API server's /metrics serves beyond its own
// request and store metrics: the Go runtime's (heap, GC, goroutines) and
// the process's (resident memory, CPU, open files), under their usual
// go_ and process_ names, and the given collectors.
func newRegistry(cs ...prometheus.Collector) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return reg, nil
}

// recursionNetworks are the clients the cluster DNS forwards names outside
// the zone for, unless --dns-recursion-networks says otherwise: loopback,
// this machine's addresses, and the pods of the cluster CIDR.
func recursionNetworks(clusterCIDR string) []netip.Prefix {
	nets := dns.LocalNetworks()
	if p, err := netip.ParsePrefix(clusterCIDR); err == nil {
		nets = append(nets, p.Masked())
	}
	return nets
}
