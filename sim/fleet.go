package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/pprof"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// FleetOptions describe a fleet of hollow agents and the server they join.
type FleetOptions struct {
	// Server is the API's URL, CAPEM the CA that signed its certificate
	// and NodeToken the node join token.
	Server    string
	CAPEM     []byte
	NodeToken string
	// Nodes is how many agents; their nodes are hollow-<First>,
	// hollow-<First+1>, … (five digits), so that fleets with distinct
	// ranges can share a server.
	Nodes, First int
	// Capacity is each node's capacity and allocatable.
	Capacity api.ResourceList
	// Mix gives the nodes the labels and taints of Options.Mix.
	Mix bool
	// StartConcurrency bounds the agents joining and registering at once
	// (default 64).
	StartConcurrency int
	// Clock drives the heartbeats; the real clock when nil.
	Clock clock.WithTicker
	// Logger receives the first failed API calls; nil discards.
	Logger *slog.Logger
	// Progress receives a line a second while the agents start; nil: none.
	Progress func(format string, args ...any)
	// ProfileLabel labels the agents' goroutines, and the client
	// connections they open, role=hollow-agent: a CPU profile of a process
	// that also runs the control plane then tells the two apart, with
	// go tool pprof -tagfocus role=hollow-agent (or -tagignore).
	ProfileLabel bool
}

// Fleet is a running fleet of hollow agents.
type Fleet struct {
	sh     *agentShared
	agents []*agent
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// StartFleet starts the agents, a bounded number joining at once, and
// returns once every one has registered its Node and watches its pods.
// An agent that cannot join or register ends the start with its error;
// the agents keep running, heartbeating and reporting their pods Running,
// until Stop or until ctx ends.
func StartFleet(ctx context.Context, o FleetOptions) (*Fleet, error) {
	if o.Nodes <= 0 {
		return nil, errors.New("sim: a fleet needs at least one node")
	}
	if o.First < 0 {
		return nil, errors.New("sim: the first node's index must not be negative")
	}
	if o.StartConcurrency <= 0 {
		o.StartConcurrency = 64
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}

	transports, err := newTransports((o.Nodes+AgentsPerTransport-1)/AgentsPerTransport, o.CAPEM)
	if err != nil {
		return nil, err
	}
	f := &Fleet{sh: &agentShared{
		server:     o.Server,
		nodeToken:  o.NodeToken,
		transports: transports,
		capacity:   o.Capacity,
		clock:      o.Clock,
		log:        o.Logger,
		mix:        o.Mix,
	}}
	ctx, f.stop = context.WithCancel(ctx)
	if o.ProfileLabel {
		ctx = pprof.WithLabels(ctx, pprof.Labels("role", "hollow-agent"))
	}
	sem := make(chan struct{}, o.StartConcurrency)
	readyCh := make(chan error, o.Nodes)
	f.agents = make([]*agent, o.Nodes)
	for i := range o.Nodes {
		a := newAgent(f.sh, o.First+i, i/AgentsPerTransport)
		f.agents[i] = a
		f.wg.Go(func() {
			pprof.SetGoroutineLabels(ctx)
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				readyCh <- ctx.Err()
				return
			}
			if err := startRetrying(ctx, o.Clock, a.start); err != nil {
				<-sem
				readyCh <- err
				return
			}
			a.started.Store(true)
			var once sync.Once
			ready := func(err error) { once.Do(func() { <-sem; readyCh <- err }) }
			a.watchPods(ctx, ready)
		})
	}
	// One heartbeat goroutine for each group of agents sharing a
	// transport: heartbeats are round trips, and one goroutine for 5,000
	// agents could not make them all within the interval on a busy machine.
	for g := 0; g < len(f.agents); g += AgentsPerTransport {
		group := f.agents[g:min(g+AgentsPerTransport, len(f.agents))]
		f.wg.Go(func() {
			pprof.SetGoroutineLabels(ctx)
			heartbeatLoop(ctx, o.Clock, group)
		})
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for ready := 0; ready < o.Nodes; {
		select {
		case err := <-readyCh:
			if err != nil {
				f.Stop()
				return nil, fmt.Errorf("sim: agent: %w", err)
			}
			ready++
		case <-tick.C:
			o.Progress("agents ready %d/%d", ready, o.Nodes)
		case <-ctx.Done():
			f.Stop()
			return nil, fmt.Errorf("sim: %d of %d agents ready: %w", ready, o.Nodes, ctx.Err())
		}
	}
	o.Progress("agents ready %d/%d", o.Nodes, o.Nodes)
	return f, nil
}

// newTransports makes the n pooled transports the agents of a fleet
// share, AgentsPerTransport agents each, rather than one: with thousands
// of streams on one HTTP/2 connection, a 5,000-node run stalled with
// every request waiting on the client connection's mutex (head-of-line
// blocking behind a blocked write), and heartbeats timed out.
func newTransports(n int, caPEM []byte) ([]*http.Transport, error) {
	transports := make([]*http.Transport, n)
	for i := range transports {
		tr, err := client.NewTransport(&client.Config{CAData: caPEM})
		if err != nil {
			for _, t := range transports[:i] {
				t.CloseIdleConnections()
			}
			return nil, err
		}
		// A hundred agents, each with its own credential, share one
		// connection: every request's Authorization header would evict
		// another agent's from the HPACK table, costing a table update
		// and hashing a long token each time and saving nothing.
		// Nothing is indexed instead, which a kubelet with a connection
		// of its own would not need.
		tr.HTTP2.MaxEncoderHeaderTableSize = 1
		transports[i] = tr
	}
	return transports, nil
}

// Errors counts the agents' API calls that failed after their retries.
func (f *Fleet) Errors() int64 { return f.sh.errors.Load() }

// Stop stops every agent and waits for them. The Nodes stay registered.
func (f *Fleet) Stop() {
	f.stop()
	f.wg.Wait()
	for _, tr := range f.sh.transports {
		tr.CloseIdleConnections()
	}
}

// fleetUsage is what a fleet process reports of itself.
type fleetUsage struct {
	cpu       time.Duration
	peakRSSMB float64
	errors    int64
}

// The lines of the fleet protocol (ServeFleet). The parent writes
// usageRequest; the fleet writes readyLine once, then a usage line
// ("usage <CPU ns> <peak RSS KiB> <failed calls>") for each request and a
// last one as it stops.
const (
	readyLine    = "ready"
	usageRequest = "usage"
	usagePrefix  = "usage "
)

// ServeFleet runs a fleet for a parent process that talks to it over in
// and out (the `berth sim agents --exit-with-stdin` protocol): it starts
// the fleet and writes "ready", answers each "usage" line with the
// process's CPU time, peak RSS and failed API calls so far, and stops the
// fleet when in ends (the parent closed it, or died) or ctx does, writing
// a last usage line. The end of in during the start abandons it.
func ServeFleet(ctx context.Context, o FleetOptions, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	requests := make(chan string)
	go func() {
		// Blocked in a read once ServeFleet has returned, this goroutine
		// goes with the process (in is its stdin).
		defer cancel()
		lines := bufio.NewScanner(in)
		for lines.Scan() {
			select {
			case requests <- lines.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	f, err := StartFleet(ctx, o)
	if err != nil {
		return err
	}
	writeUsage := func() error {
		_, err := fmt.Fprintf(out, "%s%d %d %d\n", usagePrefix, processCPU(), peakRSSKiB(), f.Errors())
		return err
	}
	if _, err := fmt.Fprintln(out, readyLine); err != nil {
		f.Stop()
		return err
	}
	for {
		select {
		case line := <-requests:
			if line != usageRequest {
				continue
			}
			if err := writeUsage(); err != nil {
				f.Stop()
				return err
			}
		case <-ctx.Done():
			f.Stop()
			return writeUsage()
		}
	}
}

// startRetryDelay is how long an agent whose join or registration timed
// out waits before it tries again.
const startRetryDelay = time.Second

// startRetrying runs start until it succeeds, fails for another reason
// than a request that timed out, or ctx ends. A machine too busy to
// answer every agent within the client's timeout slows the run down
// rather than ending it, as a node agent keeps trying to register.
func startRetrying(ctx context.Context, clk clock.Clock, start func(context.Context) error) error {
	for {
		err := start(ctx)
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		select {
		case <-clk.After(startRetryDelay):
		case <-ctx.Done():
			return err
		}
	}
}
