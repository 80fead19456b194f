package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// logsOptions are the flags of `berth logs` (SPEC §2), kubectl's names.
type logsOptions struct {
	container string
	follow    bool
	tail      int64
	previous  bool
}

// podLogOptions select the log the server streams (Kubernetes'
// PodLogOptions, the part berth serves).
type podLogOptions struct {
	Container string
	Follow    bool
	Previous  bool
	// TailLines, when not nil, is how many of the last lines to show.
	TailLines *int64
}

// podLogger is what `berth logs` needs beyond apiClient: the log stream
// of a pod's container. It is its own interface so that the fakes of the
// other commands need not grow a method they never use.
type podLogger interface {
	PodLogs(ctx context.Context, ns, name string, opts podLogOptions) (io.ReadCloser, error)
}

func newLogsCommand(g *globalOptions) *cobra.Command {
	o := &logsOptions{}
	cmd := &cobra.Command{
		Use:   "logs POD | pod/POD",
		Short: "Print the output of a pod's container",
		Long: `Logs prints what a container of a pod wrote (stdout and stderr), as its
node's agent kept it, through the control plane. A pod with more than one
container needs -c. With -f it goes on printing as the container writes,
until the container exits or the command is interrupted.`,
		Example: `  berth logs web-7d4b9c-x2k8p
  berth logs pod/db -c postgres --tail 20
  berth logs web-7d4b9c-x2k8p -f
  berth logs web-7d4b9c-x2k8p --previous`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLogs(cmd, g, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.container, "container", "c", "", "the container to print the output of")
	f.BoolVarP(&o.follow, "follow", "f", false, "go on printing as the container writes")
	f.Int64Var(&o.tail, "tail", -1, "print only this many of the last lines (-1: all)")
	f.BoolVarP(&o.previous, "previous", "p", false, "print the output of the container's previous run")
	return cmd
}

// logsPodName reads the pod argument: NAME, or pod/NAME as kubectl takes
// it.
func logsPodName(arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		name, kind = arg, ""
	}
	if ok {
		switch strings.ToLower(kind) {
		case "pod", "pods", "po":
		default:
			return "", usageErrorf("berth logs takes a pod, not %q", arg)
		}
	}
	if name == "" || strings.Contains(name, "/") {
		return "", usageErrorf("berth logs takes a pod name, not %q", arg)
	}
	return name, nil
}

func runLogs(cmd *cobra.Command, g *globalOptions, o *logsOptions, arg string) error {
	name, err := logsPodName(arg)
	if err != nil {
		return err
	}
	if o.tail < -1 {
		return usageErrorf("--tail must be -1 (all) or more, not %d", o.tail)
	}
	opts := podLogOptions{Container: o.container, Follow: o.follow, Previous: o.previous}
	if o.tail >= 0 {
		opts.TailLines = &o.tail
	}
	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	logger, ok := c.(podLogger)
	if !ok {
		return failed(errors.New("this client cannot read logs"))
	}
	ctx := cmd.Context()
	body, err := logger.PodLogs(ctx, g.namespace, name, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		fmt.Fprintln(cmd.ErrOrStderr(), errorMessage(err))
		return reportedFailure()
	}
	defer body.Close()
	if _, err := io.Copy(cmd.OutOrStdout(), body); err != nil {
		if ctx.Err() != nil {
			// Interrupted while following: the user has what they wanted.
			return nil
		}
		return failed(fmt.Errorf("read the log of pod %s: %w", name, err))
	}
	return nil
}

// PodLogs streams the log of a pod's container from GET …/pods/NAME/log.
func (a *clientAPI) PodLogs(ctx context.Context, ns, name string, opts podLogOptions) (io.ReadCloser, error) {
	pods, _ := api.LookupResource("pods")
	q := url.Values{}
	if opts.Container != "" {
		q.Set("container", opts.Container)
	}
	if opts.Follow {
		q.Set("follow", "true")
	}
	if opts.Previous {
		q.Set("previous", "true")
	}
	if opts.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*opts.TailLines, 10))
	}
	resp, err := a.c.Do(ctx, http.MethodGet, client.ResourcePath(pods, ns, name, "log"), q, nil, "")
	if err != nil {
		return nil, apiError(err)
	}
	return resp.Body, nil
}
