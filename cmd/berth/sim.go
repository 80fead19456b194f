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

	"github.com/berth-dev/berth/agent/node"
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
	parallelism              int
	mix, spread              bool
	agents                   string
	scoringStrategy          string
}

// Where `berth sim` runs its hollow agents (--agents).
const (
	simAgentsInProcess = "in-process"
	simAgentsProcess   = "process"
)

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

--agents process runs the hollow agents in a child process (berth sim
agents) rather than in this one. They still share the machine's CPUs,
but the JSON line then adds control_plane_cpu_seconds,
control_plane_cpu_ms_per_pod and control_plane_peak_rss_mb, this
process's share alone: what a control plane whose agents run on other
machines spends. cpu_seconds and cpu_ms_per_pod add up both processes
over the same time, and peak_rss_mb the two processes' peaks, which need
not have come at once: an upper bound of the whole.

The simulation keeps Go's default collector target (GOGC=100), where
berth server runs at 50: it hosts the hollow agents' work too, which on a
real cluster runs elsewhere. GOGC=50 in the environment shows the server's
trade of CPU for memory.

--mix labels the nodes (ten zones, every other node "ssd") and taints every
tenth one; by K modulo 4 the ReplicaSets' pods have no constraint, a node
selector for ssd nodes, anti-affinity keeping them one a node (with the
toleration; when the ReplicaSet has no more replicas than there are
nodes), or the toleration.

--spread gives every fourth ReplicaSet (K modulo 4 = 0, those --mix leaves
unconstrained) a topology spread constraint (at most one pod more on a node
than on the emptiest, DoNotSchedule) and a preferred anti-affinity to its
own pods by zone, so that a quarter of the pods carry what
kube-scheduler's PodTopologySpread and InterPodAffinity read; run it beside
the same command without --spread.

--scenario rollout instead creates a Deployment "web" of M replicas, waits
until all are available, sets a new image and follows the rolling update
to its end, counting available pods (Running, Ready, not being deleted) at
every revision. Its JSON line carries nodes, pods, peak_rss_mb,
create_seconds, rollout_seconds, min_available (the least such count, over
availability_revisions revisions), min_status_available (the least
status.availableReplicas, sampled every 10ms) and availability_bound
(replicas - maxUnavailable, 25% by default), none of the scheduling
figures above.

--scenario job runs a Job "batch" of M completions, --parallelism at a
time; the hollow agents end each of its pods Succeeded once it is bound.
Its JSON line carries nodes, pods, peak_rss_mb, complete_seconds (from
the Job's creation to its Complete condition), scheduled (its succeeded
pods), running (its active pods at the end) and pods_per_second (the
succeeded pods over complete_seconds).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := sim.Options{
				Nodes: o.nodes, Pods: o.pods, ReplicaSets: o.replicaSets,
				Mix: o.mix, Spread: o.spread, Scenario: o.scenario, Parallelism: o.parallelism,
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
			if err := parsePositiveQuantities(
				quantityFlag{"--node-cpu", o.nodeCPU, &opts.NodeCPU}, quantityFlag{"--node-memory", o.nodeMemory, &opts.NodeMemory},
				quantityFlag{"--pod-cpu", o.podCPU, &opts.PodCPU}, quantityFlag{"--pod-memory", o.podMemory, &opts.PodMemory},
			); err != nil {
				return err
			}
			if o.store != controlplane.StoreMemory && o.store != controlplane.StoreBolt {
				if _, err := controlplane.EtcdEndpoints(o.store); err != nil {
					return usageErrorf("--store: %q is not memory, bolt or etcd://host:port,…", o.store)
				}
			}
			if o.scenario != sim.ScenarioPods && o.scenario != sim.ScenarioRollout && o.scenario != sim.ScenarioJob && o.scenario != sim.ScenarioDaemonSet {
				return usageErrorf("--scenario: %q is not %s, %s, %s or %s", o.scenario, sim.ScenarioPods, sim.ScenarioRollout, sim.ScenarioJob, sim.ScenarioDaemonSet)
			}
			if o.parallelism < 0 {
				return usageErrorf("--parallelism must not be negative")
			}
			var err error
			if opts.MostAllocated, err = controlplane.ParseScoringStrategy(o.scoringStrategy); err != nil {
				return usageErrorf("--scheduler-scoring-strategy: %v", err)
			}
			switch o.agents {
			case simAgentsInProcess:
			case simAgentsProcess:
				exe, err := os.Executable()
				if err != nil {
					return failed(fmt.Errorf("--agents process: find this program: %w", err))
				}
				opts.AgentsCommand = []string{exe, "--log-format", g.logFormat}
				if g.verbose {
					opts.AgentsCommand = append(opts.AgentsCommand, "--verbose")
				}
				opts.AgentsCommand = append(opts.AgentsCommand, "sim", "agents")
			default:
				return usageErrorf("--agents: %q is not %s or %s", o.agents, simAgentsInProcess, simAgentsProcess)
			}
			if o.scenario != sim.ScenarioPods && o.pods <= 0 {
				return usageErrorf("--scenario %s needs --pods positive", o.scenario)
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
	f.IntVar(&o.nodes, "nodes", 0, "hollow nodes (required)")
	f.IntVar(&o.pods, "pods", 0, "pods to create (required; 0 measures the agents joining alone)")
	_ = cmd.MarkFlagRequired("nodes")
	_ = cmd.MarkFlagRequired("pods")
	f.StringVar(&o.nodeCPU, "node-cpu", "32", "cpu of each node")
	f.StringVar(&o.nodeMemory, "node-memory", "128Gi", "memory of each node")
	f.StringVar(&o.podCPU, "pod-cpu", "100m", "cpu request of each pod")
	f.StringVar(&o.podMemory, "pod-memory", "128Mi", "memory request of each pod")
	f.IntVar(&o.replicaSets, "replicasets", 1, "ReplicaSets owning the pods")
	f.StringVar(&o.store, "store", controlplane.StoreMemory, "store of the control plane: memory, bolt, or etcd://h1:2379,… (reached in the clear; the run's keys go under a prefix of their own, deleted at its end)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "end the run with what it has after so long")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measurement (first pod to last binding) to this file")
	_ = f.MarkHidden("cpuprofile")
	f.StringVar(&o.memProfile, "memprofile", "", "write a heap profile to this file once the measurement is over")
	_ = f.MarkHidden("memprofile")
	f.StringVar(&o.scenario, "scenario", sim.ScenarioPods, "pods: create --pods pods through --replicasets ReplicaSets; rollout: roll a Deployment of --pods replicas to a new image; job: run a Job of --pods completions; daemonset: a DaemonSet, a pod on every node (--pods is --nodes)")
	f.IntVar(&o.parallelism, "parallelism", 0, "the job scenario's pods at once (default: --pods)")
	f.BoolVar(&o.mix, "mix", false, "label and taint the nodes and give the ReplicaSets node selectors, anti-affinity and tolerations")
	f.BoolVar(&o.spread, "spread", false, "give every fourth ReplicaSet a topology spread constraint and a preferred pod anti-affinity term")
	f.StringVar(&o.agents, "agents", simAgentsInProcess, "where the hollow agents run: in-process, or process (a berth sim agents of their own; the result then tells the control plane's CPU and memory apart)")
	f.StringVar(&o.scoringStrategy, "scheduler-scoring-strategy", controlplane.LeastAllocated, "LeastAllocated or MostAllocated, as berth server's")
	cmd.AddCommand(newSimAgentsCommand(g))
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

// quantityFlag is a flag whose value must be a positive quantity, and
// where it goes.
type quantityFlag struct {
	flag, value string
	to          *resource.Quantity
}

// parsePositiveQuantities parses each flag's value into its place; the
// first that is not a positive quantity is a usage error.
func parsePositiveQuantities(flags ...quantityFlag) error {
	for _, f := range flags {
		v, err := resource.ParseQuantity(f.value)
		if err != nil || v.Sign() <= 0 {
			return usageErrorf("%s: %q is not a positive quantity", f.flag, f.value)
		}
		*f.to = v
	}
	return nil
}

// simAgentsOptions are the flags of `berth sim agents`.
type simAgentsOptions struct {
	server, token, tokenFile, caFile string
	nodes, first, startConcurrency   int
	maxPods                          int
	nodeCPU, nodeMemory              string
	mix, exitWithStdin               bool
}

func newSimAgentsCommand(g *globalOptions) *cobra.Command {
	o := &simAgentsOptions{}
	cmd := &cobra.Command{
		Use:   "agents --server URL --token-file FILE --nodes N",
		Short: "Run hollow agents against a berth server",
		Long: `Run N hollow agents, the nodes hollow-<first> to hollow-<first+N-1>,
against a berth server, as berth sim does: each joins with the node token,
registers its Node with the capacity given, renews its Lease every 10s and
writes its status every 5m, and reports every pod bound to it Running
without starting a process. They run until interrupted; their Nodes stay
registered (berth delete node, or the node lifecycle controller once
their heartbeats stop, deals with them).

It loads a real control plane with thousands of nodes from one machine,
as Kubernetes' kubemark does. berth sim --agents process uses it to run
its agents in a process of their own.`,
		Example: `  berth sim agents --server https://10.0.0.1:6443 --token-file /var/lib/berth/node-token \
    --ca-file /var/lib/berth/tls/ca.crt --nodes 1000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.server == "" {
				return usageErrorf("--server is required")
			}
			if o.nodes <= 0 || o.first < 0 {
				return usageErrorf("--nodes must be positive and --first not negative")
			}
			token, err := readToken(o.token, o.tokenFile)
			if err != nil {
				return err
			}
			fo := sim.FleetOptions{
				Server: o.server, NodeToken: token, Nodes: o.nodes, First: o.first, Mix: o.mix,
				StartConcurrency: o.startConcurrency, Logger: g.logger,
			}
			if fo.CAPEM, err = readCAFile(o.caFile, false, g.logger); err != nil {
				return err
			}
			if o.maxPods <= 0 {
				return usageErrorf("--max-pods must be positive")
			}
			var cpu, memory resource.Quantity
			if err := parsePositiveQuantities(
				quantityFlag{"--node-cpu", o.nodeCPU, &cpu}, quantityFlag{"--node-memory", o.nodeMemory, &memory},
			); err != nil {
				return err
			}
			fo.Capacity = sim.NodeCapacity(cpu, memory, o.maxPods)
			start := time.Now()
			stderr := cmd.ErrOrStderr()
			fo.Progress = func(format string, args ...any) {
				fmt.Fprintf(stderr, "sim agents: %6.1fs "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
			}
			if o.exitWithStdin {
				if err := sim.ServeFleet(cmd.Context(), fo, cmd.InOrStdin(), cmd.OutOrStdout()); err != nil {
					return failed(err)
				}
				return nil
			}
			fl, err := sim.StartFleet(cmd.Context(), fo)
			if err != nil {
				return failed(err)
			}
			<-cmd.Context().Done()
			fl.Stop()
			if n := fl.Errors(); n > 0 {
				fo.Progress("%d agent API calls failed", n)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.server, "server", "", "URL of the control plane")
	f.StringVar(&o.token, "token", "", "the node join token")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the node join token")
	f.StringVar(&o.caFile, "ca-file", "", "CA certificate to trust for the server")
	f.IntVar(&o.nodes, "nodes", 100, "hollow agents to run")
	f.IntVar(&o.first, "first", 0, "number of the first node (hollow-<first>), so that several runs can share a server")
	f.StringVar(&o.nodeCPU, "node-cpu", "32", "cpu of each node")
	f.StringVar(&o.nodeMemory, "node-memory", "128Gi", "memory of each node")
	f.IntVar(&o.maxPods, "max-pods", node.DefaultMaxPods, "pods each node takes")
	f.BoolVar(&o.mix, "mix", false, "label and taint the nodes as berth sim --mix does")
	f.IntVar(&o.startConcurrency, "start-concurrency", 64, "agents joining and registering at once")
	f.BoolVar(&o.exitWithStdin, "exit-with-stdin", false, "say \"ready\" on stdout, answer \"usage\" lines on stdin, and stop when stdin ends (berth sim --agents process)")
	_ = f.MarkHidden("exit-with-stdin")
	return cmd
}
