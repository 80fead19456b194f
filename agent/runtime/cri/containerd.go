package cri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

// Defaults of ContainerdOptions.
const (
	// DefaultPauseImage is the sandbox image, the kubelet's of the CRI
	// version berth speaks.
	DefaultPauseImage = "registry.k8s.io/pause:3.10"
	// DefaultCNIBinDir is where Debian's containernetworking-plugins
	// installs the plugins.
	DefaultCNIBinDir = "/usr/lib/cni"
	// containerdStopGrace is how long containerd has to exit on SIGTERM.
	containerdStopGrace = 10 * time.Second
	// restartBackOff is the first wait before containerd is started again
	// after it died; it doubles to restartBackOffMax, and starts over
	// once containerd has run for restartBackOffReset.
	restartBackOff      = time.Second
	restartBackOffMax   = time.Minute
	restartBackOffReset = 2 * time.Minute
)

// ContainerdOptions configure a containerd the agent runs as its child.
type ContainerdOptions struct {
	// Dir holds its config, root, state and socket (<data dir>/containerd).
	Dir string
	// Binary is the containerd executable; empty finds containerd on PATH.
	Binary string
	// PauseImage is the sandbox image (DefaultPauseImage).
	PauseImage string
	// CNIBinDir holds the CNI plugins (DefaultCNIBinDir); CNIConfDir the
	// network configuration the agent writes (<Dir>/cni/net.d).
	CNIBinDir, CNIConfDir string
	// RegistryConfigDir holds a hosts.toml per registry (the mirrors and
	// plain-http endpoints); empty is <Dir>/certs.d.
	RegistryConfigDir string
	// Registries are the mirrors, credentials and TLS settings of
	// --registries, written into RegistryConfigDir and the config.
	Registries *Registries
	// ImagesDir holds image archives (*.tar) imported at each start, for
	// a node without a registry; a missing one is none.
	ImagesDir string
	Clock     clock.WithTicker
	Logger    *slog.Logger
}

// Containerd is a containerd the agent started and keeps running: it is
// started again with back-off when it dies, and stopped by Stop. The
// containers it runs outlive it, under their shims.
type Containerd struct {
	o      ContainerdOptions
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited <-chan struct{}
	// restarting: containerd died and waits for its back-off.
	restarting bool
	// starts counts the processes started, for tests and logs.
	starts int
}

// Endpoint is the CRI endpoint of the containerd.
func (c *Containerd) Endpoint() string { return "unix://" + c.Socket() }

// Socket is the path of containerd's socket.
func (c *Containerd) Socket() string { return filepath.Join(c.o.Dir, "containerd.sock") }

// PID is the current containerd process, 0 while none runs.
func (c *Containerd) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Starts is how many times containerd was started.
func (c *Containerd) Starts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starts
}

// Restarting says whether containerd died and waits for its back-off to
// be started again.
func (c *Containerd) Restarting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restarting
}

// CNIConfDir is where the CNI network configuration goes.
func (c *Containerd) CNIConfDir() string { return c.o.CNIConfDir }

// StartContainerd writes containerd's config and starts it, and returns
// once its socket answers (or ctx ends). It keeps containerd running
// until Stop.
func StartContainerd(ctx context.Context, o ContainerdOptions) (*Containerd, error) {
	if o.Dir == "" {
		return nil, errors.New("containerd: no directory")
	}
	if o.Binary == "" {
		p, err := exec.LookPath("containerd")
		if err != nil {
			return nil, fmt.Errorf("--runtime containerd: %w (install containerd, or use --runtime exec)", err)
		}
		o.Binary = p
	}
	if o.PauseImage == "" {
		o.PauseImage = DefaultPauseImage
	}
	if o.CNIBinDir == "" {
		o.CNIBinDir = DefaultCNIBinDir
	}
	if o.CNIConfDir == "" {
		o.CNIConfDir = filepath.Join(o.Dir, "cni", "net.d")
	}
	if o.RegistryConfigDir == "" {
		o.RegistryConfigDir = filepath.Join(o.Dir, "certs.d")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{o.Dir, o.CNIConfDir, o.RegistryConfigDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("containerd: %w", err)
		}
	}
	if err := o.Registries.writeHosts(o.RegistryConfigDir); err != nil {
		return nil, fmt.Errorf("containerd: registries: %w", err)
	}
	if err := os.WriteFile(filepath.Join(o.Dir, "config.toml"), []byte(containerdConfig(o)), 0o600); err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	c := &Containerd{o: o, done: make(chan struct{})}
	if err := c.stopStale(ctx); err != nil {
		return nil, err
	}
	exited, err := c.start()
	if err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, exited); err != nil {
		c.kill()
		<-exited
		return nil, err
	}
	if o.ImagesDir != "" {
		if err := importDir(ctx, c.Socket(), o.ImagesDir); err != nil {
			o.Logger.Error("images not imported", "dir", o.ImagesDir, "err", err)
		}
	}
	sctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.supervise(sctx, exited)
	return c, nil
}

// capSysResource is CAP_SYS_RESOURCE, which lowering a process's
// oom_score_adj takes.
const capSysResource = 24

// hasCapability says whether this process has the capability in its
// effective set. Without CAP_SYS_RESOURCE (a container, a sandboxed VM)
// containerd must keep the pods' oom_score_adj at or above its own
// (restrict_oom_score_adj), or runc fails to start the sandboxes.
func hasCapability(bit uint) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<bit) != 0
		}
	}
	return false
}

// containerdConfig is containerd's config.toml (version 2, which
// containerd 1.6 and later read): everything under Dir, the CRI plugin
// with the sandbox image, CNI and the registry hosts directory.
func containerdConfig(o ContainerdOptions) string {
	q := strconv.Quote
	return `version = 2
root = ` + q(filepath.Join(o.Dir, "root")) + `
state = ` + q(filepath.Join(o.Dir, "state")) + `

[grpc]
  address = ` + q(filepath.Join(o.Dir, "containerd.sock")) + `

[ttrpc]
  address = ` + q(filepath.Join(o.Dir, "containerd.sock.ttrpc")) + `

[plugins."io.containerd.internal.v1.opt"]
  path = ` + q(filepath.Join(o.Dir, "opt")) + `

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ` + q(o.PauseImage) + `
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  restrict_oom_score_adj = ` + strconv.FormatBool(!hasCapability(capSysResource)) + `

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = ` + q(o.CNIBinDir) + `
  conf_dir = ` + q(o.CNIConfDir) + `

[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = ` + q(o.RegistryConfigDir) + `
` + o.Registries.authConfig()
}

// start starts one containerd process; exited closes when it ends.
func (c *Containerd) start() (<-chan struct{}, error) {
	logf, err := os.OpenFile(filepath.Join(c.o.Dir, "containerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	// A socket left by a containerd that was killed would refuse the bind.
	os.Remove(c.Socket())
	cmd := exec.Command(c.o.Binary, "--config", filepath.Join(c.o.Dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a terminal's ^C goes to the agent, which
	// stops containerd itself, after the pods' workers are done.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("containerd: start %s: %w", c.o.Binary, err)
	}
	os.WriteFile(c.pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	exited := make(chan struct{})
	c.mu.Lock()
	c.cmd, c.exited = cmd, exited
	c.starts++
	c.mu.Unlock()
	go func() {
		cmd.Wait()
		logf.Close()
		close(exited)
	}()
	return exited, nil
}

func (c *Containerd) pidFile() string { return filepath.Join(c.o.Dir, "containerd.pid") }

// stopStale stops a containerd an earlier agent started with this
// config and left running (it was killed, and could not stop it): two
// would share one root and socket.
func (c *Containerd) stopStale(ctx context.Context) error {
	b, err := os.ReadFile(c.pidFile())
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return nil
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), filepath.Join(c.o.Dir, "config.toml")) {
		return nil
	}
	c.o.Logger.Warn("stopping the containerd an earlier agent left running", "pid", pid)
	syscall.Kill(pid, syscall.SIGTERM)
	t := c.o.Clock.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	deadline := c.o.Clock.Now().Add(containerdStopGrace)
	for syscall.Kill(pid, 0) == nil {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/cmdline", pid)); err != nil {
			break
		}
		if c.o.Clock.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd: the one left running (pid %d) did not stop: %w", pid, ctx.Err())
		case <-t.C():
		}
	}
	return nil
}

// waitReady waits until the socket accepts a connection.
func (c *Containerd) waitReady(ctx context.Context, exited <-chan struct{}) error {
	t := c.o.Clock.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if conn, err := net.Dial("unix", c.Socket()); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd: not ready: %w", ctx.Err())
		case <-exited:
			return fmt.Errorf("containerd exited at start: %s", c.logTail())
		case <-t.C():
		}
	}
}

// logTail is the end of containerd's log, for an error.
func (c *Containerd) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.o.Dir, "containerd.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, "\n")
}

// supervise starts containerd again each time it dies, after a back-off
// on the clock, until ctx ends.
func (c *Containerd) supervise(ctx context.Context, exited <-chan struct{}) {
	defer close(c.done)
	backOff := restartBackOff
	startedAt := c.o.Clock.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-exited:
		}
		if c.o.Clock.Since(startedAt) >= restartBackOffReset {
			backOff = restartBackOff
		}
		c.o.Logger.Warn("containerd exited; starting it again", "after", backOff, "log", c.logTail())
		t := c.o.Clock.NewTimer(backOff)
		c.mu.Lock()
		c.restarting = true
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		c.mu.Lock()
		c.restarting = false
		c.mu.Unlock()
		backOff = min(2*backOff, restartBackOffMax)
		var err error
		startedAt = c.o.Clock.Now()
		if exited, err = c.start(); err != nil {
			c.o.Logger.Error("containerd: start again", "err", err)
			ch := make(chan struct{})
			close(ch)
			exited = ch
		}
	}
}

// Stop stops containerd (SIGTERM, then SIGKILL after a grace) and its
// supervision. The containers keep running under their shims.
func (c *Containerd) Stop() {
	c.cancel()
	<-c.done
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	t := c.o.Clock.NewTimer(containerdStopGrace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C():
		cmd.Process.Kill()
		<-exited
	}
}

// Kill kills containerd with SIGKILL, as a crash would: the supervision
// starts it again.
func (c *Containerd) Kill() {
	c.kill()
}

func (c *Containerd) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil && c.cmd.Process != nil {
		c.cmd.Process.Kill()
	}
}
