package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/sim"
)

// simOptions are the flags of `berth sim` (SPEC §9).
type simOptions struct {
	nodes, pods, replicaSets int
	nodeCPU, nodeMemory      string
	podCPU, podMemory        string
	store                    string
	timeout                  time.Duration
	cpuProfile, memProfile   string
	scenario                 string
	mix                      bool
}

func newSimCommand(g *globalOptions) *cobra.Command {
	o := &simOptions{}
	cmd := &cobra.Command{
		Use:   "sim --nodes N --pods M",
		Short: "Scale simulation with hollow nodes",
		Long: `Run a control plane in this process and N hollow agents that talk to it
over its HTTPS API on loopback: each joins with the node token, registers
its Node, renews its Lease every 10s and its status every 5m (as berth
agent does) and reports every pod bound to it Running, without starting
any process. Then create K ReplicaSets
rs-0…rs-K-1 whose replicas add up to M (written straight into the store);
the ReplicaSet controller creates the M pods and the scheduler binds them.

Progress goes to stderr every second; the run ends with one JSON line on
stdout:

  {"nodes":N,"pods":M,"scheduled":S,"running":R,"schedule_seconds":…,
   "pods_per_second":…,"p50_bind_ms":…,"p99_bind_ms":…,"p99_running_ms":…,
   "peak_rss_mb":…,"bound_seconds":…,"cpu_seconds":…,"cpu_ms_per_pod":…}

Time starts when the first pod is created and ends when the last pod is
bound; pods_per_second is the pods scheduled (M when all are) over that
time. Bind latency is from a pod's creation to its binding, running
latency from its binding to its agent's Running report. When --timeout
comes first the run ends with what it has and exits 1 if some pods were
not scheduled. bound_seconds runs from the write of the ReplicaSets to the
last binding; cpu_seconds is the CPU time the process (control plane and
agents together) used over it, and cpu_ms_per_pod that per pod bound,
which unlike the rates does not move with other work on the machine.

The simulation keeps Go's default collector target (GOGC=100), where
berth server runs at 50: it hosts the hollow agents' work too, which on a
real cluster runs elsewhere. GOGC=50 in the environment shows the server's
trade of CPU for memory.

--mix labels the nodes (ten zones, every other node "ssd") and taints every
tenth one; by K modulo 4 the ReplicaSets' pods have no constraint, a node
selector for ssd nodes, anti-affinity keeping them one a node (with the
toleration; when the ReplicaSet has no more replicas than there are
nodes), or the toleration.

--scenario rollout instead creates a Deployment "web" of M replicas, waits
until all are available, sets a new image and follows the rolling update
to its end, counting available pods (Running, Ready, not being deleted) at
every revision. The JSON line then carries create_seconds,
rollout_seconds, min_available (the least such count),
min_status_available (the least status.availableReplicas, sampled every
10ms) and availability_bound (replicas - maxUnavailable, 25% by default).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := sim.Options{
				Nodes: o.nodes, Pods: o.pods, ReplicaSets: o.replicaSets,
				Mix: o.mix, Scenario: o.scenario,
				Store: o.store, Timeout: o.timeout,
				Progress: cmd.ErrOrStderr(), Logger: g.logger,
			}
			if o.nodes <= 0 {
				return usageErrorf("--nodes must be positive")
			}
			if o.pods < 0 || o.replicaSets <= 0 {
				return usageErrorf("--pods must not be negative and --replicasets must be positive")
			}
			if o.timeout <= 0 {
				return usageErrorf("--timeout must be positive")
			}
			for _, q := range []struct {
				flag, v string
				to      *resource.Quantity
			}{
				{"--node-cpu", o.nodeCPU, &opts.NodeCPU}, {"--node-memory", o.nodeMemory, &opts.NodeMemory},
				{"--pod-cpu", o.podCPU, &opts.PodCPU}, {"--pod-memory", o.podMemory, &opts.PodMemory},
			} {
				v, err := resource.ParseQuantity(q.v)
				if err != nil || v.Sign() <= 0 {
					return usageErrorf("%s: %q is not a positive quantity", q.flag, q.v)
				}
				*q.to = v
			}
			if o.store != controlplane.StoreMemory && o.store != controlplane.StoreBolt {
				return usageErrorf("--store: %q is not memory or bolt", o.store)
			}
			if o.scenario != sim.ScenarioPods && o.scenario != sim.ScenarioRollout {
				return usageErrorf("--scenario: %q is not %s or %s", o.scenario, sim.ScenarioPods, sim.ScenarioRollout)
			}
			if o.scenario == sim.ScenarioRollout && o.pods <= 0 {
				return usageErrorf("--scenario rollout needs --pods (the Deployment's replicas) positive")
			}
			// The profiles cover the measurement: the CPU profile from the
			// first pod to the last binding (not the agents joining), the
			// heap profile at its end, at its fullest.
			var memErr, cpuErr error
			var stopCPU func()
			if o.cpuProfile != "" {
				opts.Measuring = func() { stopCPU, cpuErr = startCPUProfile(o.cpuProfile) }
			}
			opts.Measured = func() {
				if stopCPU != nil {
					stopCPU()
					stopCPU = nil
				}
				if o.memProfile != "" {
					memErr = writeHeapProfile(o.memProfile)
				}
			}
			defer func() {
				if stopCPU != nil {
					stopCPU()
				}
			}()
			res, err := sim.Run(cmd.Context(), opts)
			if err == nil {
				err = errors.Join(cpuErr, memErr)
			}
			if res != nil {
				line, merr := json.Marshal(res)
				if merr != nil {
					return failed(merr)
				}
				fmt.Fprintln(cmd.OutOrStdout(), string(line))
			}
			switch {
			case errors.Is(err, sim.ErrIncomplete):
				return failed(fmt.Errorf("%d of %d pods scheduled: %w", res.Scheduled, res.Pods, err))
			case err != nil:
				return failed(err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 100, "hollow nodes")
	f.IntVar(&o.pods, "pods", 1000, "pods to create")
	f.StringVar(&o.nodeCPU, "node-cpu", "32", "cpu of each node")
	f.StringVar(&o.nodeMemory, "node-memory", "128Gi", "memory of each node")
	f.StringVar(&o.podCPU, "pod-cpu", "100m", "cpu request of each pod")
	f.StringVar(&o.podMemory, "pod-memory", "128Mi", "memory request of each pod")
	f.IntVar(&o.replicaSets, "replicasets", 1, "ReplicaSets owning the pods")
	f.StringVar(&o.store, "store", controlplane.StoreMemory, "store of the control plane: memory or bolt")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "end the run with what it has after so long")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measurement (first pod to last binding) to this file")
	_ = f.MarkHidden("cpuprofile")
	f.StringVar(&o.memProfile, "memprofile", "", "write a heap profile to this file once the measurement is over")
	_ = f.MarkHidden("memprofile")
	f.StringVar(&o.scenario, "scenario", sim.ScenarioPods, "pods: create --pods pods through --replicasets ReplicaSets; rollout: roll a Deployment of --pods replicas to a new image")
	f.BoolVar(&o.mix, "mix", false, "label and taint the nodes and give the ReplicaSets node selectors, anti-affinity and tolerations")
	return cmd
}

// writeHeapProfile writes the heap profile, after a collection, to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("write heap profile: %w", err)
	}
	return f.Close()
}

// startCPUProfile profiles the process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
