package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/agent"
	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/agent/node"
	"github.com/berth-dev/berth/agent/pods"
	"github.com/berth-dev/berth/agent/runtime/cri"
	"github.com/berth-dev/berth/client"
)

// agentFlags are the node flags `berth agent` and `berth server` share.
type agentFlags struct {
	nodeName      string
	nodeIP        string
	nodeLabels    string
	nodeTaints    string
	capacity      string
	listen        string
	evictionHard  string
	runtime       string
	podNetwork    string
	serviceProxy  string
	clusterDNS    string
	criEndpoint   string
	pauseImage    string
	podCIDR       string
	cniConfDir    string
	registries    string
	unsafeSysctls []string
	heartbeat     time.Duration
	report        time.Duration
	housekeeping  time.Duration
	// Image garbage collection under a CRI runtime.
	imageGCHigh, imageGCLow int
	imageMinAge             time.Duration
}

// register adds the flags; the log server's address is listenName
// (--listen for the agent, --agent-listen for the server, whose --listen
// is the API's).
func (o *agentFlags) register(f flagSet, listenName, listenHelp string) {
	f.StringVar(&o.nodeName, "node-name", "", "name of this node (default: the hostname)")
	f.StringVar(&o.nodeIP, "node-ip", "", "IP of this node, and of its pods under the exec runtime (default: the first non-loopback IPv4)")
	f.StringVar(&o.nodeLabels, "node-labels", "", "labels of the Node, as k=v,k2=v2 (not node-role.kubernetes.io/, node-restriction.kubernetes.io/ or other kubernetes.io labels but the kubelet's)")
	f.StringVar(&o.capacity, "capacity", "", "override what is read from the host, as cpu=N,memory=Q,pods=N")
	f.StringVar(&o.listen, listenName, "", listenHelp)
	f.StringVar(&o.evictionHard, "eviction-hard", eviction.DefaultHard, "hard eviction thresholds")
	f.StringVar(&o.runtime, "runtime", agent.RuntimeExec, "container runtime: exec (each container's command as a host process on the node's network), containerd (images, on a containerd the agent starts from PATH with its state under the data dir, each pod on an address of its own) or cri (images, on the CRI runtime at --container-runtime-endpoint)")
	f.StringVar(&o.criEndpoint, "container-runtime-endpoint", "", "CRI socket of --runtime cri, as unix:///run/containerd/containerd.sock")
	f.StringVar(&o.pauseImage, "pause-image", cri.DefaultPauseImage, "sandbox (pause) image of the containerd of --runtime containerd")
	f.IntVar(&o.imageGCHigh, "image-gc-high-threshold", cri.DefaultImageGCHighThreshold, "percent of the image file system's disk in use at which unused images are removed, least recently used first, under --runtime containerd or cri (100: never)")
	f.IntVar(&o.imageGCLow, "image-gc-low-threshold", cri.DefaultImageGCLowThreshold, "percent of the image file system's disk in use that image garbage collection brings it down to")
	f.DurationVar(&o.imageMinAge, "minimum-image-ttl-duration", cri.DefaultImageMinimumGCAge, "how long an image is kept at least, from when the agent first saw it, before image garbage collection may remove it")
	f.StringVar(&o.cniConfDir, "cni-conf-dir", "", "where the agent writes the pods' CNI network (default: under the data dir for --runtime containerd, /etc/cni/net.d for --runtime cri)")
	f.StringVar(&o.registries, "registries", "", "registries.yaml (k3s's format: mirrors with their endpoints, plain http:// among them, and each registry's auth and tls) written into the config of the containerd of --runtime containerd")
	f.StringVar(&o.podCIDR, "pod-cidr", "", "pods' network of this node under --runtime containerd or cri while its Node has no spec.podCIDR (the Node's wins); the bridge "+cri.BridgeName+" takes its first address")
	f.StringVar(&o.podNetwork, "pod-network", "", "how the node reaches the other nodes' pods: host-gw (a route to each node's podCIDR via its InternalIP, IP forwarding, masquerade of pod traffic leaving the cluster, the node-local DNS forwarder on the pod gateway's port 53) or none; default host-gw unless --runtime is exec")
	f.StringVar(&o.serviceProxy, "service-proxy", "", "how the node serves Services' virtual IPs, node ports and load-balancer addresses: nftables (the ip and ip6 berth-proxy tables, as kube-proxy's nftables mode) or none; default nftables where --pod-network is host-gw")
	f.StringVar(&o.clusterDNS, "cluster-dns", "", "the cluster DNS server (host:port) the node-local DNS forwarder asks (default: the server's host, port "+agent.DefaultClusterDNSPort+"; berth server's own agent asks its --dns-listen)")
	f.StringSliceVar(&o.unsafeSysctls, "allowed-unsafe-sysctls", nil, "comma-separated sysctls, or patterns ending in * (kernel.shm*, net.*), pods may set beyond the safe ones; each must be one a pod's network or IPC namespace holds; a pod setting any other is refused (SysctlForbidden)")
	f.DurationVar(&o.heartbeat, "node-status-update-frequency", node.DefaultHeartbeatPeriod, "how often the agent renews its node's Lease, its heartbeat; keep it well under the server's --node-monitor-grace-period")
	f.DurationVar(&o.housekeeping, "housekeeping-interval", eviction.DefaultPeriod, "how often the agent checks --eviction-hard and each pod's ephemeral-storage limits and emptyDir sizeLimits, evicting a pod over them")
	f.DurationVar(&o.report, "node-status-report-frequency", node.DefaultStatusReportPeriod, "how often the agent writes its Node's status when nothing in it changed (a change is written at once)")
}

type flagSet interface {
	StringVar(p *string, name, value, usage string)
	IntVar(p *int, name string, value int, usage string)
	DurationVar(p *time.Duration, name string, value time.Duration, usage string)
	StringSliceVar(p *[]string, name string, value []string, usage string)
}

// config turns the flags into an agent configuration.
func (o *agentFlags) config() (agent.Config, error) {
	cfg := agent.Config{
		NodeName:                    o.nodeName,
		NodeIP:                      o.nodeIP,
		Listen:                      o.listen,
		EvictionHard:                o.evictionHard,
		Runtime:                     o.runtime,
		ContainerRuntimeEndpoint:    o.criEndpoint,
		PauseImage:                  o.pauseImage,
		ImageGCHighThresholdPercent: o.imageGCHigh,
		ImageGCLowThresholdPercent:  o.imageGCLow,
		ImageMinimumGCAge:           o.imageMinAge,
		PodCIDR:                     o.podCIDR,
		PodNetwork:                  o.podNetwork,
		ServiceProxy:                o.serviceProxy,
		ClusterDNS:                  o.clusterDNS,
		CNIConfDir:                  o.cniConfDir,
		Registries:                  o.registries,
		AllowedUnsafeSysctls:        o.unsafeSysctls,
		Version:                     version,
		HeartbeatPeriod:             o.heartbeat,
		StatusReportPeriod:          o.report,
		HousekeepingPeriod:          o.housekeeping,
	}
	var err error
	if o.nodeLabels != "" {
		if cfg.Labels, err = node.ParseLabels(o.nodeLabels); err != nil {
			return cfg, usageErrorf("--node-labels: %v", err)
		}
	}
	if o.nodeTaints != "" {
		if cfg.Taints, err = node.ParseTaints(o.nodeTaints); err != nil {
			return cfg, usageErrorf("--node-taints: %v", err)
		}
	}
	if o.capacity != "" {
		if cfg.Capacity, err = node.ParseCapacity(o.capacity); err != nil {
			return cfg, usageErrorf("--capacity: %v", err)
		}
	}
	if o.heartbeat <= 0 {
		return cfg, usageErrorf("--node-status-update-frequency must be positive")
	}
	if o.report <= 0 {
		return cfg, usageErrorf("--node-status-report-frequency must be positive")
	}
	if o.housekeeping <= 0 {
		return cfg, usageErrorf("--housekeeping-interval must be positive")
	}
	if err := pods.CheckAllowedUnsafeSysctls(o.unsafeSysctls); err != nil {
		return cfg, usageErrorf("--allowed-unsafe-sysctls: %v", err)
	}
	if _, err := eviction.ParseThresholds(o.evictionHard); err != nil {
		return cfg, usageErrorf("--eviction-hard: %v", err)
	}
	return cfg, nil
}

type agentOptions struct {
	agentFlags
	server      string
	token       string
	tokenFile   string
	caFile      string
	insecure    bool
	dataDir     string
	manifestDir string
	manifestURL string
	cleanup     bool
}

func newAgentCommand(g *globalOptions) *cobra.Command {
	o := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run a node agent",
		Long: `Run a node agent: join the control plane at --server with the node join
token, register this machine as a Node, and run the pods bound to it as
processes, with their probes, restarts, logs and eviction. The join gives
the agent a node credential and a serving certificate for its log server,
each valid for a year; the agent joins again at about 80% of that, so keep
the join token file in place.

The log server (--listen) serves the API server alone, which passes on
to it the logs, exec, attach and port-forward of the node's pods. Each
container runs under a small shim that holds its standard streams (a pipe
for its input with stdin: true, a terminal with tty: true) and serves
attach sessions, so containers outlive an agent restart and the agent
that takes them back attaches to them as to its own.

The agent keeps a node ID in its data dir and records it on its Node: an
agent with another data dir is refused that Node (two machines given one
--node-name), until the Node is deleted.

Every --housekeeping-interval the agent checks its node's memory and disk
against --eviction-hard and each pod's local storage (its emptyDir and
configMap volumes, its containers' logs) against its ephemeral-storage
limits and emptyDir sizeLimits, and evicts a pod over them, as the kubelet
does.

With several servers sharing an etcd store, give --server all their URLs
(or one a load balancer serves): the agent talks to one, and moves on to
the next when it cannot reach it or a request there goes unanswered (a
frozen machine); each heartbeat request gets
--node-status-update-frequency at most, as the kubelet's does.

Static pods from --manifest-dir or --manifest-url run even with no server:
with no --server the agent runs them alone (standalone mode).

Pods find the API server as in Kubernetes: KUBERNETES_SERVICE_HOST and
KUBERNETES_SERVICE_PORT (and the other KUBERNETES_* variables) name the
host and port of --server (the first of several), and the service-account token in
$BERTH_SERVICEACCOUNT_TOKEN_FILE has the CA of --ca-file beside it as
ca.crt, so in-cluster clients work. Static pods have no token, and the
pods of a standalone agent neither.

Containers may run as other users (securityContext.runAsUser, with an
agent running as root). The data dir is made mode 0711, so that they may
pass through it but not list it; each pod's own directory lets only its
containers' users through (a POSIX ACL, which the data dir's filesystem
must support), where emptyDirs are 0777 and the token is the user's own
when all its containers run as one user. Directories above the data dir
must let other users pass through too. The modes tell users apart, not
pods: pods that run as one user (or a host process of that user) reach
each other's files, so give pods to be kept apart users of their own.

Like the server, the agent runs Go's garbage collector at GOGC=50 unless
GOGC is set in the environment.`,
		Example: `  # join a server
  berth agent --server https://10.0.0.1:6443 --token-file /var/lib/berth/node-token --ca-file ca.crt

  # standalone: run the pods of a directory, no control plane
  berth agent --manifest-dir /etc/berth/manifests`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.cleanup {
				// As kube-proxy --cleanup: remove the rules and exit.
				if err := agent.CleanupServiceProxy(); err != nil {
					return failed(err)
				}
				return nil
			}
			tuneGC()
			cfg, err := o.config()
			if err != nil {
				return err
			}
			cfg.Server = o.server
			cfg.DataDir = o.dataDir
			cfg.ManifestDir = o.manifestDir
			cfg.ManifestURL = o.manifestURL
			cfg.InsecureSkipTLSVerify = o.insecure
			cfg.Logger = g.logger
			if o.server != "" {
				if _, err := client.ParseServers(o.server); err != nil {
					return usageErrorf("--server: %v", err)
				}
				if cfg.JoinToken, err = readToken(o.token, o.tokenFile); err != nil {
					return err
				}
				if cfg.CAData, err = readCAFile(o.caFile, o.insecure, g.logger); err != nil {
					return err
				}
				if o.insecure {
					g.logger.Warn("--insecure-skip-tls-verify: the server's identity is not checked")
				}
			} else if o.manifestDir == "" && o.manifestURL == "" {
				return usageErrorf("give --server, or --manifest-dir / --manifest-url to run standalone")
			}
			a, err := agent.New(cfg)
			if err != nil {
				return failed(err)
			}
			if err := a.Run(cmd.Context()); err != nil {
				return failed(err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	o.register(f, "listen", "address of the HTTPS log server (default <node-ip>:10250)")
	f.StringVar(&o.nodeTaints, "node-taints", "", "taints of the Node when it is registered, as key=value:Effect,… (later changed by an operator only)")
	f.StringVar(&o.server, "server", "", "URL of the control plane, or the URLs of the servers of one cluster separated by commas (the agent moves on to the next when it cannot reach one, or one leaves a request unanswered); none runs standalone")
	f.StringVar(&o.token, "token", "", "the node join token")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the node join token")
	f.StringVar(&o.caFile, "ca-file", "", "CA certificate to trust for the server")
	f.BoolVar(&o.insecure, "insecure-skip-tls-verify", false, "do not check the server's certificate (insecure)")
	f.StringVar(&o.dataDir, "data-dir", defaultAgentDataDir(), "pod directories, logs and volumes")
	f.StringVar(&o.manifestDir, "manifest-dir", "", "static pods: every *.yaml, *.yml, *.json in this directory (not recursive, dotfiles skipped)")
	f.StringVar(&o.manifestURL, "manifest-url", "", "static pods from this URL, polled")
	f.BoolVar(&o.cleanup, "cleanup", false, "remove the service proxy's nftables tables (ip and ip6 berth-proxy) and exit; a stopping agent leaves them, so that Services keep routing until the agent is back")
	return cmd
}

// readCAFile reads --ca-file, the CA to trust for the server; with none
// the system's CAs are trusted, which it warns of unless the server's
// certificate is not checked at all (insecure).
func readCAFile(path string, insecure bool, log *slog.Logger) ([]byte, error) {
	if path == "" {
		if !insecure {
			log.Warn("no --ca-file: trusting the system's CAs for the server")
		}
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("--ca-file: %v", err)
	}
	return data, nil
}

func readToken(token, file string) (string, error) {
	switch {
	case token != "" && file != "":
		return "", usageErrorf("give --token or --token-file, not both")
	case token != "":
		return token, nil
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return "", usageErrorf("--token-file: %v", err)
		}
		t := strings.TrimSpace(string(data))
		if t == "" {
			return "", usageErrorf("--token-file %s is empty", file)
		}
		return t, nil
	}
	return "", usageErrorf("--server needs the node join token: --token or --token-file")
}

// defaultAgentDataDir is SPEC's default: /var/lib/berth-agent as root,
// else under $XDG_DATA_HOME.
func defaultAgentDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/berth-agent"
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "berth-agent")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "berth-agent")
	}
	return "berth-agent"
}
