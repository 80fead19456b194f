package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/api"
)

// attachOptions are the flags of `berth attach`, kubectl's names.
type attachOptions struct {
	container string
	stdin     bool
	tty       bool
	quiet     bool
}

// podAttacher is what `berth attach` needs beyond apiClient.
type podAttacher interface {
	// PodAttach carries the streams until the session ends.
	PodAttach(ctx context.Context, ns, name string, opts podStreamOptions) error
}

func newAttachCommand(g *globalOptions) *cobra.Command {
	o := &attachOptions{}
	cmd := &cobra.Command{
		Use:   "attach POD | TYPE/NAME [-c CONTAINER] [-i] [-t]",
		Short: "Attach to the process of a pod's container",
		Long: `Attach connects to the process a pod's container runs (its command,
not a new one, as exec would run), on the pod's node, through the control
plane, as kubectl attach does: what it writes from now on (stdout and
stderr apart for a container with stdin: true, else as one stream on
stdout); with -i this command's input goes to its input, which the
container must take (stdin: true in its spec); with -i -t on a terminal,
for a container with tty: true, the terminal is this one's. The session
ends when the process ends, when this command's input ends (unless the
container is stdinOnce: its input is closed then, and its output goes on
to the end), or on Ctrl-C without a terminal; the container goes on.

Given a deployment, replicaset or replicationcontroller (deploy/NAME), it
attaches to one of its pods, as kubectl does: a ready one if there is
one. In a pod with more than one container it attaches to the one -c
names, or else to the default one, as kubectl.`,
		Example: `  berth attach web-7d4b9c-x2k8p
  berth attach -i pod/reader -c app < input.txt
  berth attach -it debug`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAttach(cmd, g, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.container, "container", "c", "", "the container to attach to")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "pass this command's input to the container's process")
	f.BoolVarP(&o.tty, "tty", "t", false, "use this terminal as the container's (with -i, from one)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print only what the container writes")
	return cmd
}

func runAttach(cmd *cobra.Command, g *globalOptions, o *attachOptions, arg string) error {
	kind, name, err := podTarget("attach", arg)
	if err != nil {
		return err
	}
	c, pod, err := connectPod(cmd, g, kind, name)
	if err != nil {
		return err
	}
	ctx, stderr := cmd.Context(), cmd.ErrOrStderr()
	attacher, ok := c.(podAttacher)
	if !ok {
		return failed(errors.New("this client cannot attach"))
	}
	if pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed {
		return failed(fmt.Errorf("cannot attach a container in a completed pod; current phase is %s", pod.Status.Phase))
	}
	// What this command says of its own (the container defaulted, no
	// terminal, the prompt hint); -q keeps stderr for the container's.
	notes := stderr
	if o.quiet {
		notes = io.Discard
	}
	opts := podStreamOptions{Container: defaultContainer(o.container, pod, notes), Stdout: cmd.OutOrStdout(), Stderr: stderr}
	if o.stdin {
		opts.Stdin = cmd.InOrStdin()
	}
	// Whether the process has a terminal was settled when it started, as
	// kubectl knows: -t for a container without one says so, and this
	// terminal is the container's when the container has one and this
	// command's input is a terminal (as for exec), -t or not.
	ctr := podContainer(pod, opts.Container)
	switch {
	case ctr != nil && o.tty && !ctr.TTY:
		fmt.Fprintf(notes, "error: Unable to use a TTY - container %s did not allocate one\n", ctr.Name)
	case ctr != nil && ctr.TTY && o.stdin:
		restore, err := useTerminal(cmd, notes, &opts)
		if err != nil {
			return err
		}
		defer restore()
	}
	if o.stdin {
		fmt.Fprintln(notes, "If you don't see a command prompt, try pressing enter.")
	}
	err = attacher.PodAttach(ctx, g.namespace, pod.Name, opts)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil
	case err != nil:
		fmt.Fprintln(stderr, errorMessage(err))
		return reportedFailure()
	}
	return nil
}

// podContainer is the pod's container (or init container) of that name;
// nil when it has none.
func podContainer(pod *api.Pod, name string) *api.Container {
	for _, list := range [][]api.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// PodAttach attaches through GET …/pods/NAME/attach, upgraded to a
// WebSocket, with Kubernetes' own client of the streaming protocol.
func (a *clientAPI) PodAttach(ctx context.Context, ns, name string, opts podStreamOptions) error {
	q := api.PodAttachOptions{Stdin: opts.Stdin != nil, Stdout: opts.Stdout != nil, Stderr: opts.Stderr != nil, TTY: opts.TTY}.Query()
	return a.podStream(ctx, ns, name, "attach", q, opts)
}
