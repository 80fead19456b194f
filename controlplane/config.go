package controlplane

import (
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/dns"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store/bolt"
	"github.com/berth-dev/berth/store/etcd"
)

// DefaultListen is the API's address when Config.Listen is empty.
const DefaultListen = ":6443"

// Defaults of the leader election over an etcd store, for the flags.
const (
	DefaultLeaseDuration = etcd.DefaultLeaseTTL
	DefaultRetryPeriod   = etcd.DefaultRetryPeriod
)

// Defaults of the cluster DNS flags, and the scheduler's scoring
// strategies, for the commands that define them.
const (
	DefaultDNSListen        = dns.DefaultListen
	DefaultDNSMetricsListen = dns.DefaultMetricsListen
	DefaultDNSHealthListen  = dns.DefaultHealthListen
	DefaultClusterDomain    = dns.DefaultZone
	LeastAllocated          = sched.LeastAllocated
	MostAllocated           = sched.MostAllocated
)

// DNSConfig is what the flags say of the cluster DNS server; the server's
// other tunables keep their defaults.
type DNSConfig struct {
	// Zone is the cluster domain (--cluster-domain).
	Zone string
	// Listen is the DNS address, UDP and TCP (--dns-listen).
	Listen string
	// Upstream is where names outside the zone go (--dns-upstream):
	// empty for the nameservers of /etc/resolv.conf, "none" to refuse them.
	Upstream string
	// MetricsListen and HealthListen serve /metrics and /healthz; empty
	// serves none.
	MetricsListen, HealthListen string
	// RecursionNetworks are the clients whose names outside the zone are
	// forwarded (--dns-recursion-networks); nil is loopback, this
	// machine's addresses and the cluster CIDR.
	RecursionNetworks []netip.Prefix
}

// IngressConfig configures the built-in Ingress proxy (--ingress,
// --ingress-listen).
type IngressConfig struct {
	// HTTPListen and HTTPSListen are the proxy's addresses; empty serves
	// none on that scheme.
	HTTPListen, HTTPSListen string
	// Optional runs the server without the proxy, with a warning, when
	// its addresses cannot be bound: the defaults, :80 and :443, need
	// root or CAP_NET_BIND_SERVICE, and a server started without either
	// still runs.
	Optional bool
}

// Default addresses of the Ingress proxy.
const (
	DefaultIngressHTTPListen  = ":80"
	DefaultIngressHTTPSListen = ":443"
)

// options are the DNS server's options for this config.
func (c DNSConfig) options() dns.Options {
	return dns.Options{Zone: c.Zone, Listen: c.Listen, Upstream: c.Upstream, MetricsListen: c.MetricsListen, HealthListen: c.HealthListen,
		RecursionNetworks: c.RecursionNetworks}
}

// DefaultConfig is the configuration of `berth server` with no flags but
// its data dir: every default written out, in the one place New also
// takes them from.
func DefaultConfig() Config { return Config{}.withDefaults() }

// withDefaults fills in the default of every field left zero.
func (cfg Config) withDefaults() Config {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Store == "" {
		cfg.Store = StoreBolt
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.NodeMonitorPeriod == 0 {
		cfg.NodeMonitorPeriod = DefaultNodeMonitorPeriod
	}
	if cfg.NodeMonitorGracePeriod == 0 {
		cfg.NodeMonitorGracePeriod = DefaultNodeMonitorGracePeriod
	}
	if cfg.PodEvictionTimeout == 0 {
		cfg.PodEvictionTimeout = DefaultPodEvictionTimeout
	}
	if cfg.TerminatedPodGCThreshold == 0 {
		cfg.TerminatedPodGCThreshold = DefaultTerminatedPodGCThreshold
	}
	if cfg.EventTTL == 0 {
		cfg.EventTTL = DefaultEventTTL
	}
	return cfg
}

// ParseScoringStrategy turns --scheduler-scoring-strategy into
// Config.MostAllocated.
func ParseScoringStrategy(name string) (mostAllocated bool, err error) {
	return sched.ParseScoringStrategy(name)
}

// ParseSources turns --source flags into Config.Sources.
func ParseSources(values []string) ([]source.Spec, error) {
	specs := make([]source.Spec, 0, len(values))
	for _, v := range values {
		spec, err := source.Parse(v)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// WriteSnapshotFile checks a snapshot of the store read from r and
// writes it to path (berth snapshot save).
func WriteSnapshotFile(r io.Reader, path string) (bolt.SnapshotInfo, error) {
	return bolt.WriteSnapshotFile(r, path, nil)
}

// RestoreSnapshot puts a saved snapshot in place of the store of a
// stopped server's data dir (berth snapshot restore).
func RestoreSnapshot(snapshot, dataDir string, now time.Time) (bolt.RestoreResult, error) {
	return bolt.Restore(snapshot, filepath.Join(dataDir, StoreFile), now)
}
