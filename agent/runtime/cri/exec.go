package cri

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"

	"github.com/berth-dev/berth/agent/runtime"
)

// maxExecOutput caps what Exec returns, as the exec runtime caps it.
const maxExecOutput = 16 << 10

// Exec implements runtime.Runtime with ExecSync, bounded by ctx's deadline.
func (r *Runtime) Exec(ctx context.Context, id runtime.ID, argv []string) ([]byte, int, error) {
	rn, err := r.lookup(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	var timeout time.Duration
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Second)
	}
	stdout, stderr, err := r.rs.ExecSync(ctx, rn.criID, argv, timeout)
	out := append(stdout, stderr...)
	if len(out) > maxExecOutput {
		out = out[:maxExecOutput]
	}
	var ce utilexec.CodeExitError
	if errors.As(err, &ce) {
		return out, ce.Code, nil
	}
	if err != nil {
		return out, 0, fmt.Errorf("cri: exec in %s: %w", id, err)
	}
	return out, 0, nil
}

// ExecStream implements runtime.Runtime through the runtime's streaming
// server: Exec gives a URL, which is spoken to as the API server speaks to
// a kubelet's.
func (r *Runtime) ExecStream(ctx context.Context, id runtime.ID, opts runtime.ExecOptions) (int, error) {
	rn, err := r.lookup(ctx, id)
	if err != nil {
		return 0, err
	}
	resp, err := r.rs.Exec(ctx, &runtimeapi.ExecRequest{
		ContainerId: rn.criID, Cmd: opts.Argv, Tty: opts.TTY,
		Stdin: opts.Stdin != nil, Stdout: opts.Stdout != nil, Stderr: opts.Stderr != nil && !opts.TTY,
	})
	if err != nil {
		return 0, fmt.Errorf("cri: exec in %s: %w", id, err)
	}
	so := remotecommand.StreamOptions{Stdin: opts.Stdin, Stdout: opts.Stdout, Tty: opts.TTY}
	if !opts.TTY {
		so.Stderr = opts.Stderr
	}
	if opts.Resize != nil {
		so.TerminalSizeQueue = sizeQueue{ctx: ctx, c: opts.Resize}
	}
	err = stream(ctx, resp.Url, so)
	var ce utilexec.CodeExitError
	if errors.As(err, &ce) {
		return ce.Code, nil
	}
	var ee utilexec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitStatus(), nil
	}
	return 0, err
}

// Attach implements runtime.Runtime through the streaming server.
func (r *Runtime) Attach(ctx context.Context, id runtime.ID, opts runtime.AttachOptions) error {
	rn, err := r.lookup(ctx, id)
	if err != nil {
		return err
	}
	if rn.status.State != runtime.StateRunning {
		return fmt.Errorf("%s is not running", id)
	}
	resp, err := r.rs.Attach(ctx, &runtimeapi.AttachRequest{
		ContainerId: rn.criID, Stdin: opts.Stdin != nil, Stdout: opts.Stdout != nil, Stderr: opts.Stderr != nil,
		Tty: opts.Resize != nil,
	})
	if err != nil {
		return fmt.Errorf("cri: attach to %s: %w", id, err)
	}
	so := remotecommand.StreamOptions{Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr, Tty: opts.Resize != nil}
	if so.Tty {
		so.Stderr = nil
		so.TerminalSizeQueue = sizeQueue{ctx: ctx, c: opts.Resize}
	}
	return stream(ctx, resp.Url, so)
}

func stream(ctx context.Context, u string, so remotecommand.StreamOptions) error {
	pu, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("cri: streaming url %q: %w", u, err)
	}
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", pu)
	if err != nil {
		return fmt.Errorf("cri: streaming %s: %w", pu.Redacted(), err)
	}
	return ex.StreamWithContext(ctx, so)
}

// sizeQueue feeds terminal sizes to a stream until ctx ends.
type sizeQueue struct {
	ctx context.Context
	c   <-chan runtime.TerminalSize
}

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case <-q.ctx.Done():
		return nil
	case s, ok := <-q.c:
		if !ok {
			return nil
		}
		return &remotecommand.TerminalSize{Width: s.Width, Height: s.Height}
	}
}
