package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// logsOptions are the flags of `berth logs` (SPEC §2), kubectl's names.
type logsOptions struct {
	container     string
	follow        bool
	tail          int64
	previous      bool
	timestamps    bool
	since         time.Duration
	sinceTime     string
	selector      string
	allContainers bool
	prefix        bool
	maxRequests   int
	ignoreErrors  bool
	limitBytes    int64
}

// podLogger is what `berth logs` needs beyond apiClient: the log stream
// of a pod's container. It is its own interface so that the fakes of the
// other commands need not grow a method they never use.
type podLogger interface {
	PodLogs(ctx context.Context, ns, name string, opts api.PodLogOptions) (io.ReadCloser, error)
}

func newLogsCommand(g *globalOptions) *cobra.Command {
	o := &logsOptions{}
	cmd := &cobra.Command{
		Use:   "logs (POD | TYPE/NAME | -l SELECTOR)",
		Short: "Print the output of a pod's container",
		Long: `Logs prints what a container of a pod wrote (stdout and stderr), as its
node's agent kept it, through the control plane. Of a pod with more than
one container it reads the one -c names, each in turn with
--all-containers (init containers first), or else the default one, as
kubectl: the one the kubectl.kubernetes.io/default-container annotation
names, or the first, saying which. With -f it goes on printing as the container writes, until the
container exits or the command is interrupted. --timestamps puts the time
each line was written in front of it, and --since or --since-time leave
out the lines written before.

Given a deployment, replicaset or replicationcontroller (deploy/NAME), it
reads one of its pods, as kubectl does: a ready one if there is one. Given
a label selector (-l) it reads every pod that matches, the last 10 lines
of each unless --tail says otherwise; with -f it follows them all at once,
at most --max-log-requests of them, their lines interleaved whole.
--prefix puts [pod/NAME/CONTAINER] in front of each line. With
--ignore-errors a log that cannot be read is reported and the others are
still printed.`,
		Example: `  berth logs web-7d4b9c-x2k8p
  berth logs pod/db -c postgres --tail 20
  berth logs web-7d4b9c-x2k8p -f
  berth logs web-7d4b9c-x2k8p --previous
  berth logs deploy/web --since 10m --timestamps
  berth logs deploy/web --all-containers
  berth logs -l app=web -f --prefix`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			return runLogs(cmd, g, o, arg)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.container, "container", "c", "", "the container to print the output of")
	f.BoolVarP(&o.follow, "follow", "f", false, "go on printing as the container writes")
	f.Int64Var(&o.tail, "tail", -1, "print only this many of the last lines (-1: all; 10 with a selector)")
	f.BoolVarP(&o.previous, "previous", "p", false, "print the output of the container's previous run")
	f.BoolVar(&o.timestamps, "timestamps", false, "put each line's time (RFC 3339) in front of it")
	f.DurationVar(&o.since, "since", 0, "print only the lines written in this last while, as 5s, 2m or 3h")
	f.StringVar(&o.sinceTime, "since-time", "", "print only the lines written from this time on (RFC 3339)")
	f.StringVarP(&o.selector, "selector", "l", "", "read every pod this label selector matches, as app=web")
	f.BoolVar(&o.allContainers, "all-containers", false, "print the output of every container of the pod (init containers first)")
	f.BoolVar(&o.prefix, "prefix", false, "put the source of each line, [pod/NAME/CONTAINER], in front of it")
	f.IntVar(&o.maxRequests, "max-log-requests", 5, "with -f, how many logs may be followed at once")
	f.BoolVar(&o.ignoreErrors, "ignore-errors", false, "report a log that cannot be read and go on with the others")
	f.Int64Var(&o.limitBytes, "limit-bytes", 0, "print at most this many bytes of each log (0: no limit)")
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
	for _, o := range objs {
		p := o.(*api.Pod)
		if p.DeletionTimestamp != nil {
			continue
		}
		if best == nil || compareForReading(p, best) < 0 {
			best = p
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no pods of %s %s", k.Resource, name)
	}
	return best, nil
}

// compareForReading orders pods for reading as kubectl does: a ready pod
// before a running one, a running one before one only bound, and then the
// oldest (and by name, so that the order is the same every time).
func compareForReading(p, q *api.Pod) int {
	rank := func(p *api.Pod) int {
		r := 0
		if p.Spec.NodeName != "" {
			r++
		}
		if p.Status.Phase == api.PodRunning {
			r += 2
		}
		if p.Ready() {
			r += 4
		}
		return r
	}
	if c := cmp.Compare(rank(q), rank(p)); c != 0 {
		return c
	}
	if c := p.CreationTimestamp.Time.Compare(q.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(p.Name, q.Name)
}

func runLogs(cmd *cobra.Command, g *globalOptions, o *logsOptions, arg string) error {
	var kind *api.Kind
	var name string
	switch {
	case arg != "" && o.selector != "":
		return usageErrorf("give a pod or a selector (-l), not both")
	case arg == "" && o.selector == "":
		return usageErrorf("berth logs takes a pod, TYPE/NAME or a selector (-l)")
	case arg != "":
		var err error
		if kind, name, err = logsTarget(arg); err != nil {
			return err
		}
	default:
		if err := checkSelectors(o.selector, ""); err != nil {
			return err
		}
		if !cmd.Flags().Changed("tail") {
			o.tail = 10 // as kubectl: a selector may match many pods
		}
	}
	if o.tail < -1 {
		return usageErrorf("--tail must be -1 (all) or more, not %d", o.tail)
	}
	if o.allContainers && o.container != "" {
		return usageErrorf("--container and --all-containers cannot both be given")
	}
	if o.maxRequests < 1 {
		return usageErrorf("--max-log-requests must be 1 or more, not %d", o.maxRequests)
	}
	if o.limitBytes < 0 {
		return usageErrorf("--limit-bytes must be 0 or more, not %d", o.limitBytes)
	}
	opts := api.PodLogOptions{Follow: o.follow, Previous: o.previous, Timestamps: o.timestamps, LimitBytes: o.limitBytes}
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
	streams, err := logStreams(ctx, c, g.namespace, kind, name, o, cmd.ErrOrStderr())
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), errorMessage(err))
		return reportedFailure()
	}
	if len(streams) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), noResourcesMessage([]resourceRequest{{kind: podKind()}}, g.namespace, false))
		return nil
	}
	if o.follow && len(streams) > o.maxRequests {
		return failed(fmt.Errorf("you are attempting to follow %d log streams, but at most %d may be followed at once: use --max-log-requests to raise it", len(streams), o.maxRequests))
	}
	var report func(error)
	if o.ignoreErrors {
		var mu sync.Mutex
		report = func(err error) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintln(cmd.ErrOrStderr(), errorMessage(err))
		}
	}
	err = printLogs(ctx, logger, g.namespace, streams, opts, o.prefix, report, cmd.OutOrStdout())
	if err == nil || ctx.Err() != nil {
		// Interrupted while following: the user has what they wanted.
		return nil
	}
	fmt.Fprintln(cmd.ErrOrStderr(), errorMessage(err))
	return reportedFailure()
}

// logStream is one container's log to print; an empty container is the
// server's choice (the pod's only one).
type logStream struct {
	pod, container string
}

// logStreams are the logs `berth logs` prints: of the pod named, of the
// pod a workload's (kind's) pods offer, or of every pod the selector
// matches, in the order kubectl reads them; of one container, or of each
// with --all-containers.
func logStreams(ctx context.Context, c apiClient, ns string, kind *api.Kind, name string, o *logsOptions, stderr io.Writer) ([]logStream, error) {
	var pods []*api.Pod
	switch {
	case o.selector != "":
		objs, _, err := c.List(ctx, podKind(), ns, listOptions{LabelSelector: o.selector})
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			pods = append(pods, obj.(*api.Pod))
		}
		slices.SortFunc(pods, compareForReading)
	case kind == nil && o.container != "":
		// A pod and a container named: nothing to look up.
		return []logStream{{pod: name, container: o.container}}, nil
	default:
		pod, err := resolvePod(ctx, c, kind, ns, name)
		if err != nil {
			return nil, err
		}
		pods = []*api.Pod{pod}
	}
	var streams []logStream
	for _, p := range pods {
		if !o.allContainers {
			streams = append(streams, logStream{pod: p.Name, container: defaultContainer(o.container, p, stderr)})
			continue
		}
		for _, ctrs := range [][]api.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, ctr := range ctrs {
				streams = append(streams, logStream{pod: p.Name, container: ctr.Name})
			}
		}
	}
	return streams, nil
}

// defaultContainerAnnotation names the container kubectl logs and exec
// use in a pod when none is named.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// defaultContainer is the container of pod a command uses: the one named,
// else as kubectl chooses it, the one the pod's default-container
// annotation names, else the first. Of a pod with several it says which
// on w, in kubectl's words.
func defaultContainer(named string, pod *api.Pod, w io.Writer) string {
	if named != "" {
		return named
	}
	ctrs := pod.Spec.Containers
	if len(ctrs) == 0 {
		return ""
	}
	name := ctrs[0].Name
	if want := pod.Annotations[defaultContainerAnnotation]; want != "" {
		for _, c := range ctrs {
			if c.Name == want {
				name = want
			}
		}
	}
	if len(ctrs)+len(pod.Spec.InitContainers) > 1 {
		var all []string
		for _, c := range ctrs {
			all = append(all, c.Name)
		}
		for _, c := range pod.Spec.InitContainers {
			all = append(all, c.Name+" (init)")
		}
		fmt.Fprintf(w, "Defaulted container %q out of: %s\n", name, strings.Join(all, ", "))
	}
	return name
}

// printLogs copies the streams to out: one after the other, or, when
// following several, all at once, whole lines interleaved. The first
// error ends the printing, unless report is given: then each error goes
// to it and the other streams go on, as kubectl's --ignore-errors.
func printLogs(ctx context.Context, logger podLogger, ns string, streams []logStream, opts api.PodLogOptions, prefix bool, report func(error), out io.Writer) error {
	var mu sync.Mutex
	copyOne := func(ctx context.Context, s logStream) error {
		o := opts
		o.Container = s.container
		body, err := logger.PodLogs(ctx, ns, s.pod, o)
		if err != nil {
			return err
		}
		defer body.Close()
		w := out
		var lw *lineWriter
		if prefix || (opts.Follow && len(streams) > 1) {
			lw = &lineWriter{mu: &mu, out: out}
			if prefix {
				lw.prefix = "[pod/" + s.pod + "/" + s.container + "] "
			}
			w = lw
		}
		_, err = io.Copy(w, body)
		if lw != nil {
			lw.flush()
		}
		if err != nil {
			return fmt.Errorf("read the log of pod %s: %w", s.pod, err)
		}
		return nil
	}
	copyStream := func(ctx context.Context, s logStream) error {
		err := copyOne(ctx, s)
		if err != nil && report != nil && ctx.Err() == nil {
			report(err)
			return nil
		}
		return err
	}
	if !opts.Follow || len(streams) == 1 {
		for _, s := range streams {
			if err := copyStream(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, s := range streams {
		wg.Go(func() {
			if err := copyStream(ctx, s); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// lineWriter writes whole lines to out, each after prefix, holding a
// partial line until its end comes (or flush): several streams can share
// out without tearing each other's lines.
type lineWriter struct {
	mu      *sync.Mutex
	out     io.Writer
	prefix  string
	partial []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			break
		}
		if err := w.emit(p[:i+1]); err != nil {
			return n - len(p), err
		}
		p = p[i+1:]
	}
	return n, nil
}

// emit writes the partial line and rest as one line, in one write.
func (w *lineWriter) emit(rest []byte) error {
	line := make([]byte, 0, len(w.prefix)+len(w.partial)+len(rest))
	line = append(append(append(line, w.prefix...), w.partial...), rest...)
	w.partial = w.partial[:0]
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.out.Write(line)
	return err
}

// flush writes what is left of a last line without its end.
func (w *lineWriter) flush() {
	if len(w.partial) > 0 {
		_ = w.emit(nil)
	}
}

// PodLogs streams the log of a pod's container from GET …/pods/NAME/log.
func (a *clientAPI) PodLogs(ctx context.Context, ns, name string, opts api.PodLogOptions) (io.ReadCloser, error) {
	pods, _ := api.LookupResource("pods")
	q := opts.Query()
	if opts.Container != "" {
		q.Set("container", opts.Container)
	}
	resp, err := a.c.Do(ctx, http.MethodGet, client.ResourcePath(pods, ns, name, "log"), q, nil, "")
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
