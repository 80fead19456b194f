package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berth-dev/berth/api"
)

// Args are the flags of `berth sim agents` that start the fleet o
// describes, reading the CA and the node token from the files named; the
// clock, logger and progress are the child's own.
func (o *FleetOptions) Args(caFile, tokenFile string) []string {
	args := []string{
		"--server", o.Server, "--ca-file", caFile, "--token-file", tokenFile,
		"--nodes", strconv.Itoa(o.Nodes), "--first", strconv.Itoa(o.First),
	}
	for _, f := range []struct {
		flag string
		name api.ResourceName
	}{{"--node-cpu", api.ResourceCPU}, {"--node-memory", api.ResourceMemory}, {"--max-pods", api.ResourcePods}} {
		if q, ok := o.Capacity[f.name]; ok {
			args = append(args, f.flag, q.String())
		}
	}
	if o.Mix {
		args = append(args, "--mix")
	}
	if o.StartConcurrency > 0 {
		args = append(args, "--start-concurrency", strconv.Itoa(o.StartConcurrency))
	}
	return args
}

// fleetProcess is a fleet of hollow agents in a child process that
// serves the ServeFleet protocol on its stdin and stdout.
type fleetProcess struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	// lines are the child's stdout, a line at a time, closed at its end.
	lines chan string
	// mu keeps one usage request at a time.
	mu sync.Mutex
	// stopTimeout bounds how long stop waits for the child to end once
	// its stdin is closed, before it kills it.
	stopTimeout time.Duration
}

// fleetStopTimeout is how long a fleet process has to stop its agents and
// report once its stdin is closed.
const fleetStopTimeout = 30 * time.Second

// startFleetProcess runs argv with the flags of the fleet o (Args), the CA
// and the token written to files in dir, the child's stderr going to
// stderr, and returns once the child says every agent is ready. ctx ending
// before that stops the child; after it, stop does, so that a run its
// timeout ends still gets the child's last report.
func startFleetProcess(ctx context.Context, argv []string, o FleetOptions, dir string, stderr io.Writer) (*fleetProcess, error) {
	if len(argv) == 0 {
		return nil, errors.New("sim: no command for the agents' process")
	}
	caFile, tokenFile := filepath.Join(dir, "agents-ca.crt"), filepath.Join(dir, "agents-node-token")
	if err := os.WriteFile(caFile, o.CAPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(tokenFile, []byte(o.NodeToken+"\n"), 0o600); err != nil {
		return nil, err
	}
	args := append(append(slices.Clone(argv[1:]), o.Args(caFile, tokenFile)...), "--exit-with-stdin")
	cmd := exec.Command(argv[0], args...)
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sim: start the agents' process: %w", err)
	}
	p := &fleetProcess{cmd: cmd, in: in, lines: make(chan string, 1), stopTimeout: fleetStopTimeout}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	select {
	case line, ok := <-p.lines:
		if ok && line == readyLine {
			return p, nil
		}
		_, err := p.stop()
		if ok {
			return nil, fmt.Errorf("sim: the agents' process said %q, not %q", line, readyLine)
		}
		return nil, fmt.Errorf("sim: the agents' process ended before its agents were ready: %v", err)
	case <-ctx.Done():
		// No report is wanted: the run is over.
		_ = cmd.Process.Kill()
		_, _ = p.stop()
		return nil, ctx.Err()
	}
}

// usage asks the child for its CPU time, peak RSS and failed calls. A
// child that has not answered stopTimeout later is killed, which ends
// the wait.
func (p *fleetProcess) usage() (fleetUsage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kill := time.AfterFunc(p.stopTimeout, func() { _ = p.cmd.Process.Kill() })
	defer kill.Stop()
	if _, err := fmt.Fprintln(p.in, usageRequest); err != nil {
		return fleetUsage{}, fmt.Errorf("sim: ask the agents' process: %w", err)
	}
	line, ok := <-p.lines
	if !ok {
		return fleetUsage{}, errors.New("sim: the agents' process ended")
	}
	return parseUsage(line)
}

// stop closes the child's stdin, which stops its agents, and returns the
// usage it reports last. A child that has not ended stopTimeout later is
// killed.
func (p *fleetProcess) stop() (fleetUsage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.in.Close()
	kill := time.AfterFunc(p.stopTimeout, func() { _ = p.cmd.Process.Kill() })
	defer kill.Stop()
	var last string
	for line := range p.lines {
		last = line
	}
	if err := p.cmd.Wait(); err != nil {
		return fleetUsage{}, fmt.Errorf("sim: the agents' process: %w", err)
	}
	return parseUsage(last)
}

// parseUsage reads a usage line: "usage <CPU ns> <peak RSS KiB> <failed calls>".
func parseUsage(line string) (fleetUsage, error) {
	f := strings.Fields(strings.TrimPrefix(line, usagePrefix))
	if !strings.HasPrefix(line, usagePrefix) || len(f) != 3 {
		return fleetUsage{}, fmt.Errorf("sim: the agents' process said %q, not a usage line", line)
	}
	var n [3]int64
	for i := range f {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || v < 0 {
			return fleetUsage{}, fmt.Errorf("sim: the agents' process said %q, not a usage line", line)
		}
		n[i] = v
	}
	return fleetUsage{cpu: time.Duration(n[0]), peakRSSMB: round(float64(n[1])/1024, 1), errors: n[2]}, nil
}

// cpuTime is the CPU time of the control plane's process and, when they
// run in a process of their own (separate), of the agents' (unless their
// process did not answer: agentsMissing).
type cpuTime struct {
	process, agents         time.Duration
	separate, agentsMissing bool
}

// runFleet is a run's fleet: in this process, or in one of its own.
type runFleet struct {
	inProcess *Fleet
	child     *fleetProcess
	log       func(format string, args ...any)
	// stopped and last are set by stop: the child's last usage.
	stopped bool
	last    fleetUsage
}

// startAgents starts the fleet fo describes, in a process of its own
// when o.AgentsCommand is set, and returns once every agent is ready.
// The control plane ending first (cpErr) ends the wait; the start then
// goes on in a goroutine of wg until ctx ends, and stops what it started.
func startAgents(ctx context.Context, o *Options, fo FleetOptions, dir string, cpErr <-chan error, wg *sync.WaitGroup) (*runFleet, error) {
	type started struct {
		fl  *runFleet
		err error
	}
	ch := make(chan started, 1)
	wg.Go(func() {
		fl := &runFleet{log: fo.Progress}
		var err error
		if o.AgentsCommand != nil {
			fl.child, err = startFleetProcess(ctx, o.AgentsCommand, fo, dir, o.Progress)
			if err == nil {
				fo.Progress("agents ready %d/%d, in a process of their own", fo.Nodes, fo.Nodes)
			}
		} else {
			fl.inProcess, err = StartFleet(ctx, fo)
		}
		ch <- started{fl, err}
	})
	select {
	case s := <-ch:
		return s.fl, s.err
	case err := <-cpErr:
		// The start fails or ends with ctx; a fleet that started anyway
		// is stopped.
		wg.Go(func() {
			if s := <-ch; s.err == nil {
				s.fl.stop()
			}
		})
		return nil, fmt.Errorf("sim: control plane stopped: %v", err)
	}
}

// cpu reads the CPU time used so far.
func (f *runFleet) cpu() cpuTime {
	t := cpuTime{process: processCPU()}
	if f.child != nil {
		t.separate = true
		u, err := f.child.usage()
		if err != nil {
			f.log("%v", err)
			t.agentsMissing = true
			return t
		}
		t.agents = u.cpu
	}
	return t
}

// stop stops the agents; it may be called more than once.
func (f *runFleet) stop() {
	if f.stopped {
		return
	}
	f.stopped = true
	if f.inProcess != nil {
		f.inProcess.Stop()
		return
	}
	u, err := f.child.stop()
	if err != nil {
		f.log("%v", err)
	}
	f.last = u
}

// failedCalls counts the agents' failed API calls; after stop when the
// agents have a process of their own.
func (f *runFleet) failedCalls() int64 {
	if f.inProcess != nil {
		return f.inProcess.Errors()
	}
	return f.last.errors
}

// memory sets the result's peak RSS: this process's, and with the agents
// in a process of their own (after stop) the two added up, this one's
// alone in ControlPlanePeakRSSMB. Without the child's last report the
// sum is unknown and PeakRSSMB is left 0.
func (f *runFleet) memory(res *Result) {
	own := peakRSSMB()
	switch {
	case f.child == nil:
		res.PeakRSSMB = own
	case f.last.peakRSSMB > 0:
		res.ControlPlanePeakRSSMB = own
		res.PeakRSSMB = round(own+f.last.peakRSSMB, 1)
	default:
		res.ControlPlanePeakRSSMB = own
		f.log("the agents' process did not report its peak RSS: peak_rss_mb is unknown")
	}
}
