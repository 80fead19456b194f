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
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// logsOptions are the flags of `berth logs` (SPEC §2), kubectl's names.
type logsOptions struct {
	container  string
	follow     bool
	tail       int64
	previous   bool
	timestamps bool
	since      time.Duration
	sinceTime  string
}

// podLogOptions select the log the server streams (Kubernetes'
// PodLogOptions, the part berth serves).
type podLogOptions struct {
	Container string
	Follow    bool
	Previous  bool
	// TailLines, when not nil, is how many of the last lines to show.
	TailLines *int64
	// Timestamps puts each line's time in front of it.
	Timestamps bool
	// SinceSeconds (counted back on the node's clock) or SinceTime, when
	// set, leave out the lines written before.
	SinceSeconds int64
	SinceTime    time.Time
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
		Use:   "logs POD | TYPE/NAME",
		Short: "Print the output of a pod's container",
		Long: `Logs prints what a container of a pod wrote (stdout and stderr), as its
node's agent kept it, through the control plane. A pod with more than one
container needs -c. With -f it goes on printing as the container writes,
until the container exits or the command is interrupted. --timestamps puts
the time each line was written in front of it, and --since or --since-time
leave out the lines written before.

Given a deployment, replicaset or replicationcontroller (deploy/NAME), it
reads one of its pods, as kubectl does: a ready one if there is one.`,
		Example: `  berth logs web-7d4b9c-x2k8p
  berth logs pod/db -c postgres --tail 20
  berth logs web-7d4b9c-x2k8p -f
  berth logs web-7d4b9c-x2k8p --previous
  berth logs deploy/web --since 10m --timestamps
  berth logs deploy/web`,
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
	f.BoolVar(&o.timestamps, "timestamps", false, "put each line's time (RFC 3339) in front of it")
	f.DurationVar(&o.since, "since", 0, "print only the lines written in this last while, as 5s, 2m or 3h")
	f.StringVar(&o.sinceTime, "since-time", "", "print only the lines written from this time on (RFC 3339)")
	return cmd
}

// logsTarget reads the argument of `berth logs` (see podTarget).
func logsTarget(arg string) (*api.Kind, string, error) { return podTarget("logs", arg) }

// podTarget reads the pod argument of `berth <command>`: NAME or pod/NAME,
// or a workload (deploy/, rs/, rc/ NAME, any name lookupKind knows for
// those kinds), whose pod is then chosen as kubectl chooses it. It returns
// the kind (nil for a pod) and the name.
func podTarget(command, arg string) (*api.Kind, string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		name, kind = arg, ""
	}
	var k *api.Kind
	if ok {
		var err error
		if k, err = lookupKind(kind); err != nil {
			return nil, "", usageErrorf("%v", err)
		}
		switch k {
		case api.KindOf(&api.Pod{}):
			k = nil
		case api.KindOf(&api.Deployment{}), api.KindOf(&api.ReplicaSet{}), api.KindOf(&api.ReplicationController{}):
		default:
			return nil, "", usageErrorf("berth %s takes a pod or a deployment, replicaset or replicationcontroller, not %q", command, arg)
		}
	}
	if name == "" || strings.Contains(name, "/") {
		return nil, "", usageErrorf("berth %s takes a pod name, not %q", command, arg)
	}
	return k, name, nil
}

// podOf picks the pod of a workload to read, as kubectl does: the running
// pods first, then the ready, then the oldest (its choice is
// deterministic, so repeated calls read the same pod).
func podOf(ctx context.Context, c apiClient, k *api.Kind, ns, name string) (*api.Pod, error) {
	obj, err := c.Get(ctx, k, ns, name)
	if err != nil {
		return nil, err
	}
	var sel *metav1.LabelSelector
	switch o := obj.(type) {
	case *api.Deployment:
		sel = o.Spec.Selector
	case *api.ReplicaSet:
		sel = o.Spec.Selector
	case *api.ReplicationController:
		sel = &metav1.LabelSelector{MatchLabels: o.Spec.Selector}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() {
		return nil, fmt.Errorf("%s %s has no usable selector", k.Resource, name)
	}
	objs, _, err := c.List(ctx, api.KindOf(&api.Pod{}), ns, listOptions{LabelSelector: s.String()})
	if err != nil {
		return nil, err
	}
	var best *api.Pod
	rank := func(p *api.Pod) int {
		r := 0
		if p.Spec.NodeName != "" {
			r++
		}
		if p.Status.Phase == api.PodRunning {
			r += 2
		}
		for _, c := range p.Status.Conditions {
			if c.Type == api.PodReady && c.Status == api.ConditionTrue {
				r += 4
			}
		}
		return r
	}
	for _, o := range objs {
		p := o.(*api.Pod)
		if p.DeletionTimestamp != nil {
			continue
		}
		if best == nil || rank(p) > rank(best) ||
			(rank(p) == rank(best) && p.CreationTimestamp.Before(&best.CreationTimestamp)) {
			best = p
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no pods of %s %s", k.Resource, name)
	}
	return best, nil
}

func runLogs(cmd *cobra.Command, g *globalOptions, o *logsOptions, arg string) error {
	kind, name, err := logsTarget(arg)
	if err != nil {
		return err
	}
	if o.tail < -1 {
		return usageErrorf("--tail must be -1 (all) or more, not %d", o.tail)
	}
	opts := podLogOptions{Container: o.container, Follow: o.follow, Previous: o.previous, Timestamps: o.timestamps}
	if o.tail >= 0 {
		opts.TailLines = &o.tail
	}
	switch {
	case o.since != 0 && o.sinceTime != "":
		return usageErrorf("--since and --since-time cannot both be given")
	case o.since < 0:
		return usageErrorf("--since must be a positive duration, not %s", o.since)
	case o.since > 0:
		// Whole seconds, as the API takes them; a part of one rounds up.
		opts.SinceSeconds = int64((o.since + time.Second - 1) / time.Second)
	case o.sinceTime != "":
		t, err := time.Parse(time.RFC3339, o.sinceTime)
		if err != nil {
			return usageErrorf("--since-time %q: want an RFC 3339 time, as 2026-11-30T12:00:00Z", o.sinceTime)
		}
		opts.SinceTime = t
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
	if kind != nil {
		pod, err := podOf(ctx, c, kind, g.namespace, name)
		if err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), errorMessage(err))
			return reportedFailure()
		}
		name = pod.Name
	}
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
	if opts.Timestamps {
		q.Set("timestamps", "true")
	}
	if opts.SinceSeconds > 0 {
		q.Set("sinceSeconds", strconv.FormatInt(opts.SinceSeconds, 10))
	}
	if !opts.SinceTime.IsZero() {
		q.Set("sinceTime", opts.SinceTime.UTC().Format(time.RFC3339))
	}
	resp, err := a.c.Do(ctx, http.MethodGet, client.ResourcePath(pods, ns, name, "log"), q, nil, "")
	if err != nil {
		return nil, apiError(err)
	}
	return resp.Body, nil
}
