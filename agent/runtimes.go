package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/berth-dev/berth/agent/podnet"
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/agent/runtime/cri"
	"github.com/berth-dev/berth/agent/runtime/exec"
	"github.com/berth-dev/berth/api"
)

// Runtimes a node can run (--runtime).
const (
	// RuntimeContainerd runs images on a containerd the agent starts as
	// its child, with its config and state under the data dir.
	RuntimeContainerd = "containerd"
	// RuntimeCRI runs images on a CRI runtime already running at
	// --container-runtime-endpoint (containerd, CRI-O).
	RuntimeCRI = "cri"
)

// podNetworkPeriod is how often the agent reads its Node's podCIDR, for
// the pods' CNI network, until it has one.
const podNetworkPeriod = 10 * time.Second

// agentRuntime is the runtime the agent owns: it closes it on exit.
type agentRuntime interface {
	runtime.Runtime
	Close() error
}

// openRuntime opens the runtime cfg names: for containerd it first starts
// containerd, which the caller stops with the returned function.
func openRuntime(cfg Config) (agentRuntime, *cri.Containerd, error) {
	switch cfg.Runtime {
	case RuntimeExec:
		if cfg.ContainerRuntimeEndpoint != "" {
			return nil, nil, fmt.Errorf("--container-runtime-endpoint: the exec runtime has none (use --runtime cri)")
		}
		rt, err := exec.New(exec.Options{Root: filepath.Join(cfg.DataDir, "pods"), Logger: cfg.Logger, Clock: cfg.Clock})
		return rt, nil, err
	case RuntimeContainerd, RuntimeCRI:
		if err := imageGCPolicy(cfg).Validate(); err != nil {
			return nil, nil, err
		}
		if cfg.Registries != "" && cfg.Runtime == RuntimeCRI {
			return nil, nil, fmt.Errorf("--registries is for the containerd of --runtime containerd: configure the runtime of --runtime cri itself")
		}
	default:
		return nil, nil, fmt.Errorf("--runtime %q: want %s, %s or %s", cfg.Runtime, RuntimeExec, RuntimeContainerd, RuntimeCRI)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	endpoint := cfg.ContainerRuntimeEndpoint
	var cd *cri.Containerd
	if cfg.Runtime == RuntimeContainerd {
		if endpoint != "" {
			return nil, nil, fmt.Errorf("--container-runtime-endpoint is for --runtime cri: with --runtime containerd the agent runs its own")
		}
		var regs *cri.Registries
		if cfg.Registries != "" {
			var err error
			if regs, err = cri.LoadRegistries(cfg.Registries); err != nil {
				return nil, nil, err
			}
		}
		var err error
		cd, err = cri.StartContainerd(ctx, cri.ContainerdOptions{
			Dir:               containerdDir(cfg.DataDir),
			PauseImage:        cfg.PauseImage,
			CNIConfDir:        cniConfDir(cfg),
			RegistryConfigDir: cfg.RegistryConfigDir,
			Registries:        regs,
			ImagesDir:         filepath.Join(cfg.DataDir, "images"),
			Clock:             cfg.Clock,
			Logger:            cfg.Logger.With("component", "containerd"),
		})
		if err != nil {
			return nil, nil, err
		}
		endpoint = cd.Endpoint()
	} else if endpoint == "" {
		return nil, nil, fmt.Errorf("--runtime cri needs --container-runtime-endpoint (unix:///run/containerd/containerd.sock, say)")
	}
	rt, err := cri.New(ctx, cri.Options{Endpoint: endpoint, Clock: cfg.Clock, Logger: cfg.Logger})
	if err != nil {
		if cd != nil {
			cd.Stop()
		}
		return nil, nil, err
	}
	return rt, cd, nil
}

// imageGCPolicy is the image garbage collection cfg asks for, with the
// kubelet's defaults; the sandbox image of the agent's containerd is
// never removed.
func (a *Agent) imageGCPolicy() cri.ImageGCPolicy {
	return imageGCPolicy(a.cfg)
}

func imageGCPolicy(cfg Config) cri.ImageGCPolicy {
	p := cri.ImageGCPolicy{
		HighThresholdPercent: cfg.ImageGCHighThresholdPercent,
		LowThresholdPercent:  cfg.ImageGCLowThresholdPercent,
		MinAge:               cfg.ImageMinimumGCAge,
	}
	if p.HighThresholdPercent == 0 && p.LowThresholdPercent == 0 {
		p.HighThresholdPercent, p.LowThresholdPercent = cri.DefaultImageGCHighThreshold, cri.DefaultImageGCLowThreshold
	}
	if p.MinAge == 0 {
		p.MinAge = cri.DefaultImageMinimumGCAge
	}
	if cfg.PauseImage != "" {
		p.Keep = []string{cfg.PauseImage}
	}
	return p
}

// containerdDir holds the containerd the agent runs.
func containerdDir(dataDir string) string { return filepath.Join(dataDir, "containerd") }

// cniConfDir is where the agent writes the pods' CNI network: for its
// own containerd, under the data dir; for another runtime, where that
// runtime reads it (--cni-conf-dir, /etc/cni/net.d by default).
func cniConfDir(cfg Config) string {
	if cfg.CNIConfDir != "" {
		return cfg.CNIConfDir
	}
	if cfg.Runtime == RuntimeContainerd {
		return filepath.Join(containerdDir(cfg.DataDir), "cni", "net.d")
	}
	return "/etc/cni/net.d"
}

// writePodNetwork writes the pods' CNI network for podCIDR, and the DNS
// server the pods are given (the bridge's gateway).
func (a *Agent) writePodNetwork(podCIDR string) error {
	wrote, err := cri.WriteCNIConfig(cniConfDir(a.cfg), podCIDR, a.cfg.podNetwork() != PodNetworkHostGW)
	if err != nil {
		return fmt.Errorf("pod network %s: %w", podCIDR, err)
	}
	gw, _ := podnet.Gateway(podCIDR)
	a.pods.SetNameServer(gw.String())
	if wrote {
		a.log.Info("pod network written", "podCIDR", podCIDR, "bridge", cri.BridgeName, "gateway", gw.String())
	}
	return nil
}

// podNetwork keeps the pods' network on the Node's spec.podCIDR, read
// from the API until the control plane has given the node one.
func (a *Agent) podNetwork(ctx context.Context) error {
	t := a.cfg.Clock.NewTicker(podNetworkPeriod)
	defer t.Stop()
	for {
		if c := a.connectedClient(); c != nil {
			obj, err := c.Get(ctx, api.KindOf(&api.Node{}), "", a.cfg.NodeName)
			if err == nil {
				if cidr := obj.(*api.Node).Spec.PodCIDR; cidr != "" {
					if err := a.writePodNetwork(cidr); err != nil {
						a.log.Error("pod network", "err", err)
					}
				}
			} else if ctx.Err() == nil {
				a.log.Warn("read node for its podCIDR", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-a.nodeRegistered:
		}
	}
}

// pokePodNetwork has podNetwork read the Node now: it was just registered,
// and the control plane gives a new Node its podCIDR then.
func (a *Agent) pokePodNetwork() {
	select {
	case a.nodeRegistered <- struct{}{}:
	default:
	}
}
