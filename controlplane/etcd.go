package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/berth-dev/berth/store/etcd"
)

// StoreEtcdScheme starts a --store value that names etcd's members:
// etcd://h1:2379,h2:2379.
const StoreEtcdScheme = "etcd://"

// EtcdConfig is how a control plane uses the etcd of --store etcd://…,
// with kube-apiserver's flags where it has them.
type EtcdConfig struct {
	// CAFile verifies etcd's certificate (--etcd-cafile); CertFile and
	// KeyFile are the client certificate (--etcd-certfile,
	// --etcd-keyfile). Any of them makes the connection TLS.
	CAFile, CertFile, KeyFile string
	// Prefix is the key prefix of the cluster's state (--etcd-prefix,
	// default /berth).
	Prefix string
	// CompactionInterval is how often the leader compacts etcd's history
	// (--etcd-compaction-interval); zero takes the default, 5m, and a
	// negative value never compacts (the flag's 0).
	CompactionInterval time.Duration
	// LeaseDuration is how long a leader that stopped renewing keeps its
	// election (--leader-elect-lease-duration, default 4s): how soon
	// another control plane takes over from one that died.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader tries a write etcd does not
	// answer before it gives up the lead (--leader-elect-renew-deadline,
	// default two thirds of the lease).
	RenewDeadline time.Duration
	// RetryPeriod is the longest wait between tries to campaign, follow
	// the log or read the leader after etcd failed one
	// (--leader-elect-retry-period, default 1s).
	RetryPeriod time.Duration
}

// EtcdEndpoints reads the members of an etcd:// --store value, as
// host:port.
func EtcdEndpoints(v string) ([]string, error) { return etcdEndpoints(v) }

// etcdEndpoints reads the members of an etcd:// --store value.
func etcdEndpoints(v string) ([]string, error) {
	rest, ok := strings.CutPrefix(v, StoreEtcdScheme)
	if !ok {
		return nil, fmt.Errorf("--store %q: not %shost:port,…", v, StoreEtcdScheme)
	}
	var out []string
	for _, hp := range strings.Split(rest, ",") {
		hp = strings.TrimSpace(hp)
		host, port, err := net.SplitHostPort(hp)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("--store %s: %q is not host:port", v, hp)
		}
		out = append(out, hp)
	}
	return out, nil
}

// check finds flags that cannot work: TLS files without an etcd store, a
// client certificate without its key.
func (c EtcdConfig) check(etcdStore bool) error {
	tlsFiles := c.CAFile != "" || c.CertFile != "" || c.KeyFile != ""
	switch {
	case tlsFiles && !etcdStore:
		return errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile are for --store etcd://…")
	case (c.CertFile == "") != (c.KeyFile == ""):
		return errors.New("--etcd-certfile and --etcd-keyfile go together")
	}
	return nil
}

// tlsConfig is the TLS of the connection to etcd, nil for none.
func (c EtcdConfig) tlsConfig() (*tls.Config, error) {
	if c.CAFile == "" && c.CertFile == "" && c.KeyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cafile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--etcd-cafile %s: no PEM certificate in it", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--etcd-certfile, --etcd-keyfile: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// openEtcd opens the etcd backend cfg names.
func openEtcd(ctx context.Context, cfg Config) (*etcd.Backend, error) {
	hosts, err := etcdEndpoints(cfg.Store)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := cfg.Etcd.tlsConfig()
	if err != nil {
		return nil, err
	}
	scheme := "http://"
	if tlsCfg != nil {
		scheme = "https://"
	}
	endpoints := make([]string, len(hosts))
	for i, h := range hosts {
		endpoints[i] = scheme + h
	}
	return etcd.Open(ctx, etcd.Options{
		Endpoints:          endpoints,
		TLS:                tlsCfg,
		Prefix:             cfg.Etcd.Prefix,
		LeaseTTL:           cfg.Etcd.LeaseDuration,
		RenewDeadline:      cfg.Etcd.RenewDeadline,
		RetryPeriod:        cfg.Etcd.RetryPeriod,
		CompactionInterval: cfg.Etcd.CompactionInterval,
		Clock:              cfg.Clock,
		Logger:             cfg.Logger,
	})
}
