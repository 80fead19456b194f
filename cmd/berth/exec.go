package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// execOptions are the flags of `berth exec`, kubectl's names.
type execOptions struct {
	container string
	stdin     bool
	tty       bool
}

// podStreamOptions are the container and the streams an exec or an
// attach carries. A nil stream is not asked for.
type podStreamOptions struct {
	Container string
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	// TTY carries a terminal, sized from Sizes.
	TTY   bool
	Sizes remotecommand.TerminalSizeQueue
}

// podExecOptions are what an exec runs and with which streams (Kubernetes'
// PodExecOptions).
type podExecOptions struct {
	podStreamOptions
	Command []string
}

// podExecer is what `berth exec` needs beyond apiClient.
type podExecer interface {
	// PodExec runs a command and returns its exit code once it ends.
	PodExec(ctx context.Context, ns, name string, opts podExecOptions) (int, error)
}

func newExecCommand(g *globalOptions) *cobra.Command {
	o := &execOptions{}
	cmd := &cobra.Command{
		Use:   "exec POD | TYPE/NAME [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]",
		Short: "Run a command in a pod's container",
		Long: `Exec runs a command beside a pod's container, in its environment (its
variables, working directory and user), on the pod's node, through the
control plane, as kubectl exec does. Its output comes back as it is
written; with -i the command reads this command's input; with -i -t it
runs on a terminal, for a shell, when this command's input is one (as in
kubectl, -t without -i gives no terminal). berth exits with the
command's exit code.

Given a deployment, replicaset or replicationcontroller (deploy/NAME), it
runs in one of its pods, as kubectl does: a ready one if there is one. In
a pod with more than one container it runs in the one -c names, or else
in the default one, as kubectl: the one the
kubectl.kubernetes.io/default-container annotation names, or the first,
saying which.`,
		Example: `  berth exec web-7d4b9c-x2k8p -- ls /data
  berth exec deploy/web -- sh -c 'echo $HOSTNAME'
  berth exec -it deploy/web -- sh
  echo hello | berth exec -i pod/web -c app -- cat`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return usageErrorf("berth exec takes one pod, then -- and the command: berth exec POD -- COMMAND [ARG...]")
			}
			return runExec(cmd, g, o, args[0], args[1:])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.container, "container", "c", "", "the container to run the command in")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "pass this command's input to the command")
	f.BoolVarP(&o.tty, "tty", "t", false, "run the command on a terminal (with -i, from one)")
	return cmd
}

func runExec(cmd *cobra.Command, g *globalOptions, o *execOptions, arg string, command []string) error {
	kind, name, err := podTarget("exec", arg)
	if err != nil {
		return err
	}
	if command[0] == "" {
		return usageErrorf("berth exec needs a command after --")
	}
	c, pod, err := connectPod(cmd, g, kind, name)
	if err != nil {
		return err
	}
	ctx, stderr := cmd.Context(), cmd.ErrOrStderr()
	execer, ok := c.(podExecer)
	if !ok {
		return failed(errors.New("this client cannot run commands"))
	}
	opts := podExecOptions{Command: command, podStreamOptions: podStreamOptions{
		Container: defaultContainer(o.container, pod, stderr), Stdout: cmd.OutOrStdout(), Stderr: stderr}}
	if o.stdin {
		opts.Stdin = cmd.InOrStdin()
	}
	// A terminal needs input that is one, as kubectl's: -t without -i
	// gets none, and -t -i on input that is not a terminal gets none
	// with a warning.
	if o.tty && o.stdin {
		restore, err := useTerminal(cmd, stderr, &opts.podStreamOptions)
		if err != nil {
			return err
		}
		defer restore()
	}
	code, err := execer.PodExec(ctx, g.namespace, pod.Name, opts)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil
	case err != nil:
		fmt.Fprintln(stderr, errorMessage(err))
		return reportedFailure()
	case code != 0:
		return &exitError{code: code}
	}
	return nil
}

// useTerminal puts this command's input, when it is a terminal, in raw
// mode and carries it as the remote terminal, sized as this command's
// output when that is a terminal too; else it says why not on notes, as
// kubectl does, and carries none. restore gives the terminal back.
func useTerminal(cmd *cobra.Command, notes io.Writer, opts *podStreamOptions) (restore func(), err error) {
	in, isFile := cmd.InOrStdin().(*os.File)
	if !isFile || !term.IsTerminal(int(in.Fd())) {
		fmt.Fprintln(notes, "Unable to use a TTY - input is not a terminal or the right kind of file")
		return func() {}, nil
	}
	state, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return nil, failed(fmt.Errorf("terminal: %w", err))
	}
	opts.TTY = true
	// A terminal carries stderr with stdout.
	opts.Stderr = nil
	stop := func() {}
	if out, ok := cmd.OutOrStdout().(*os.File); ok && term.IsTerminal(int(out.Fd())) {
		sizes := newTerminalSizes(cmd.Context(), int(out.Fd()))
		opts.Sizes = sizes
		stop = sizes.stop
	}
	return func() {
		stop()
		term.Restore(int(in.Fd()), state)
	}, nil
}

// PodExec runs a command through GET …/pods/NAME/exec, upgraded to a
// WebSocket, with Kubernetes' own client of the streaming protocol.
func (a *clientAPI) PodExec(ctx context.Context, ns, name string, opts podExecOptions) (int, error) {
	q := api.PodExecOptions{Command: opts.Command, Stdin: opts.Stdin != nil, Stdout: opts.Stdout != nil, Stderr: opts.Stderr != nil, TTY: opts.TTY}.Query()
	err := a.podStream(ctx, ns, name, "exec", q, opts.podStreamOptions)
	var exitErr utilexec.CodeExitError
	if errors.As(err, &exitErr) {
		return exitErr.Code, nil
	}
	return 0, err
}

// podStream carries opts' streams through GET …/pods/NAME/sub?q, upgraded
// to a WebSocket, until the exec or attach ends.
func (a *clientAPI) podStream(ctx context.Context, ns, name, sub string, q url.Values, opts podStreamOptions) error {
	if opts.Container != "" {
		q.Set("container", opts.Container)
	}
	u := a.podURL(ns, name, sub) + "?" + q.Encode()
	ex, err := remotecommand.NewWebSocketExecutor(a.restConfig(), http.MethodGet, u)
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{
		Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr, Tty: opts.TTY, TerminalSizeQueue: opts.Sizes,
	})
}

// terminalSizes reports this terminal's size, then each new one as the
// terminal is resized (SIGWINCH), to the remote terminal.
type terminalSizes struct {
	fd      int
	sizes   chan remotecommand.TerminalSize
	signals chan os.Signal
	done    chan struct{}
}

func newTerminalSizes(ctx context.Context, fd int) *terminalSizes {
	s := &terminalSizes{fd: fd, sizes: make(chan remotecommand.TerminalSize, 1), signals: make(chan os.Signal, 1), done: make(chan struct{})}
	s.send()
	signal.Notify(s.signals, syscall.SIGWINCH)
	go func() {
		for {
			select {
			case <-s.signals:
				s.send()
			case <-ctx.Done():
				return
			case <-s.done:
				return
			}
		}
	}()
	return s
}

// send queues the current size, replacing one not yet taken.
func (s *terminalSizes) send() {
	w, h, err := term.GetSize(s.fd)
	if err != nil {
		return
	}
	select {
	case <-s.sizes:
	default:
	}
	s.sizes <- remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}
}

// Next is remotecommand.TerminalSizeQueue's: the next size, nil once the
// exec is over.
func (s *terminalSizes) Next() *remotecommand.TerminalSize {
	select {
	case sz := <-s.sizes:
		return &sz
	case <-s.done:
		return nil
	}
}

func (s *terminalSizes) stop() {
	signal.Stop(s.signals)
	close(s.done)
}

// restConfig is the client's server and credentials as Kubernetes' own
// client takes them: exec and port-forward speak their streaming
// protocols through it, to the one server the client sends to now (its
// Config.Server may list several).
func (a *clientAPI) restConfig() *rest.Config {
	return &rest.Config{
		Host:        a.c.Server(),
		BearerToken: a.cfg.Token,
		UserAgent:   a.cfg.UserAgent,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   a.cfg.CAData,
			CertData: a.cfg.CertData,
			KeyData:  a.cfg.KeyData,
			Insecure: a.cfg.InsecureSkipTLSVerify,
		},
	}
}

// podURL is the URL of a pod's subresource on the client's server.
func (a *clientAPI) podURL(ns, name, sub string) string {
	return strings.TrimSuffix(a.c.Server(), "/") + client.ResourcePath(api.KindOf(&api.Pod{}), ns, name, sub)
}

// connectPod connects to the API and finds the pod a command names, as
// NAME or TYPE/NAME (a workload's pod, as podOf picks it). The pod is
// asked for first, as kubectl asks, so that a missing one is reported as
// the API reports it rather than as a failed upgrade. Errors are printed
// and answered as the command's exit.
func connectPod(cmd *cobra.Command, g *globalOptions, kind *api.Kind, name string) (apiClient, *api.Pod, error) {
	c, err := connectAPI(g)
	if err != nil {
		return nil, nil, failed(err)
	}
	pod, err := resolvePod(cmd.Context(), c, kind, g.namespace, name)
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), errorMessage(err))
		return nil, nil, reportedFailure()
	}
	return c, pod, nil
}

// resolvePod is the pod a command names: a workload's (kind's) pod chosen
// among its pods as kubectl chooses it (podOf), else the pod itself.
func resolvePod(ctx context.Context, c apiClient, kind *api.Kind, ns, name string) (*api.Pod, error) {
	if kind != nil {
		return podOf(ctx, c, kind, ns, name)
	}
	obj, err := c.Get(ctx, podKind(), ns, name)
	if err != nil {
		return nil, err
	}
	return obj.(*api.Pod), nil
}
