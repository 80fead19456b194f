package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// reconcileOptions are the flags of `berth reconcile source`.
type reconcileOptions struct {
	allowPrune bool
	withSource bool
	timeout    time.Duration
}

func newReconcileCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Sync something now and wait for the result",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newReconcileSourceCommand(g))
	return cmd
}

func newReconcileSourceCommand(g *globalOptions) *cobra.Command {
	o := &reconcileOptions{}
	cmd := &cobra.Command{
		Use:   "source NAME",
		Short: "Sync a source now and wait for the result",
		Long: `Reconcile asks the server to read the source now (a git fetch, a directory
read, an HTTP GET) and apply what it holds, waits until that sync is done,
and prints the revision and the outcome. It exits 0 when the revision was
applied, 1 when it was not (the message says why: every error of an
invalid revision with its file, document and field; a fetch that failed;
the prune guard).

The request is the annotation berth.dev/reconcile-requested-at on the
Source, a timestamp; the server answers it in status.lastHandledReconcileAt.
A request that loses to another writer of the Source (409 Conflict) is
read and written again after a short back-off, at most 5 times.
Requests that come while a sync runs are answered together by the next
one, so any answer at or after this command's request is its answer.

A revision that would prune more than half of the source's objects is held
back by the prune guard. --allow-prune lets that one revision through: the
one held back now, or the one this sync reads.

A Source with spec.wait is Ready only once what it applied is healthy:
reconcile waits for that too. --with-source prints each step as it goes
(fetched, built, applied N objects, waiting for M to become healthy,
ready), as flux reconcile does.`,
		Example: `  berth reconcile source fleet
  berth reconcile source fleet --with-source
  berth reconcile source fleet --allow-prune`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReconcileSource(cmd, g, o, args[0])
		},
	}
	cmd.Flags().BoolVar(&o.allowPrune, "allow-prune", false, "let the revision prune more than half of the source's objects")
	cmd.Flags().BoolVar(&o.withSource, "with-source", false, "fetch the source first and print the sync's progress step by step")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for the sync")
	return cmd
}

func runReconcileSource(cmd *cobra.Command, g *globalOptions, o *reconcileOptions, name string) error {
	if o.timeout <= 0 {
		return usageErrorf("--timeout must be positive")
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	k := api.KindOf(&api.Source{})
	obj, err := c.Get(ctx, k, "", name)
	if err != nil {
		fmt.Fprintln(stderr, errorMessage(err))
		return reportedFailure()
	}
	src := obj.(*api.Source)
	if readyReason(src) == api.ReasonNotConfigured {
		return failed(fmt.Errorf("source %s is not configured on the server (no --source flag names it), so nothing can sync it", name))
	}
	if src.Spec.Suspend {
		return failed(fmt.Errorf("source %s is suspended: `berth resume source %s` first", name, name))
	}
	if o.withSource {
		fmt.Fprintf(stdout, "► fetching source/%s (%s %s)\n", name, src.Spec.Type, src.Spec.URL)
	}
	allow := ""
	if o.allowPrune && readyReason(src) == api.ReasonPruneGuard {
		allow = src.Status.LastAttemptedRevision
	}
	src, err = requestSync(ctx, c, k, name, allow)
	if err == nil && o.allowPrune && allow == "" && readyReason(src) == api.ReasonPruneGuard && src.Status.LastAttemptedRevision != "" {
		// The revision this sync read is held back: let it through.
		fmt.Fprintf(stderr, "revision %s is held back by the prune guard; syncing again with it allowed (--allow-prune)\n", src.Status.LastAttemptedRevision)
		src, err = requestSync(ctx, c, k, name, src.Status.LastAttemptedRevision)
	}
	if err == nil && o.withSource {
		printSyncSteps(stdout, src)
	}
	if err == nil && waitingForHealth(src) {
		src, err = waitHealthy(ctx, c, k, src, func(s *api.Source) {
			if o.withSource {
				printHealthStep(stdout, s)
			}
		})
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return failed(fmt.Errorf("timed out after %s waiting for source %s to sync", o.timeout, name))
		}
		fmt.Fprintln(stderr, errorMessage(err))
		return reportedFailure()
	}
	return printSyncOutcome(stdout, stderr, src)
}

// printSyncSteps says what the sync that answered the request did: the
// revision fetched, the objects built and applied.
func printSyncSteps(out io.Writer, src *api.Source) {
	rev := src.Status.LastAttemptedRevision
	switch readyReason(src) {
	case api.ReasonFetchFailed:
		fmt.Fprintf(out, "✗ fetch failed\n")
		return
	}
	line := fmt.Sprintf("✔ fetched revision %s", orNone(rev))
	if c := src.Status.LastAppliedCommit; c != nil && src.Status.LastAppliedRevision == rev && c.Message != "" {
		line += fmt.Sprintf(" (%s)", c.Message)
	}
	fmt.Fprintln(out, line)
	switch readyReason(src) {
	case api.ReasonInvalidRevision:
		fmt.Fprintf(out, "✗ build failed: revision %s refused, nothing applied\n", orNone(rev))
		return
	case api.ReasonPruneGuard, api.ReasonForbidden:
		fmt.Fprintf(out, "✗ not applied (%s)\n", readyReason(src))
		return
	}
	fmt.Fprintf(out, "✔ built %d objects\n", src.Status.Objects)
	msg := ""
	if c := readyCondition(src); c != nil {
		msg, _, _ = strings.Cut(c.Message, ";")
		if _, counts, ok := strings.Cut(msg, ": "); ok {
			msg = " (" + counts + ")"
		} else {
			msg = ""
		}
	}
	fmt.Fprintf(out, "✔ applied %d objects%s\n", src.Status.Objects, msg)
}

// printHealthStep says how many objects are not healthy yet.
func printHealthStep(out io.Writer, src *api.Source) {
	if waitingForHealth(src) {
		fmt.Fprintf(out, "◎ waiting for %d of %d objects to become healthy\n", len(src.Status.Unhealthy), src.Status.Objects)
	}
}

// waitingForHealth reports whether the Source applied its revision and
// waits for its objects to become healthy (spec.wait).
func waitingForHealth(src *api.Source) bool {
	c := readyCondition(src)
	return c != nil && c.Status == metav1.ConditionUnknown && c.Reason == api.ReasonProgressing && src.Spec.Wait
}

// waitHealthy follows the Source until its health check ends, calling
// step at each change of what it waits for.
func waitHealthy(ctx context.Context, c apiClient, k *api.Kind, src *api.Source, step func(*api.Source)) (*api.Source, error) {
	last, reported := "", false
	report := func(s *api.Source) {
		if key := strings.Join(s.Status.Unhealthy, "\n"); !reported || key != last {
			last, reported = key, true
			step(s)
		}
	}
	report(src)
	rv := src.GetResourceVersion()
	for {
		w, err := c.Watch(ctx, k, "", listOptions{FieldSelector: "metadata.name=" + src.Name, ResourceVersion: rv})
		if err != nil {
			return nil, err
		}
		for {
			e, err := w.Next(ctx)
			if err != nil {
				w.Stop()
				if errors.Is(err, errWatchClosed) {
					break
				}
				return nil, err
			}
			if e.Type == watchDeleted {
				w.Stop()
				return nil, fmt.Errorf("source %s was deleted", src.Name)
			}
			s, ok := e.Object.(*api.Source)
			if !ok {
				continue
			}
			rv = s.GetResourceVersion()
			if !waitingForHealth(s) {
				w.Stop()
				return s, nil
			}
			report(s)
		}
	}
}

// requestSync asks for a sync of the source through its annotations and
// waits until the server answers it, returning the Source as it then is.
//
// The server merges requests that come while one waits and answers only
// the newest, so a request counts as answered by any handled timestamp at
// or after its own: with several `berth reconcile` at once, each sees the
// sync that answered the newest.
func requestSync(ctx context.Context, c apiClient, k *api.Kind, name, allowPrune string) (*api.Source, error) {
	obj, at, err := writeRequest(ctx, c, k, name, allowPrune)
	if err != nil {
		return nil, err
	}
	rv := obj.GetResourceVersion()
	for {
		if src := obj.(*api.Source); handledSince(src, at) {
			return src, nil
		}
		w, err := c.Watch(ctx, k, "", listOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: rv})
		if err != nil {
			return nil, err
		}
		obj, rv, err = nextHandled(ctx, w, at, rv)
		w.Stop()
		switch {
		case errors.Is(err, errWatchClosed):
			// Watch again from where this one ended.
			got, gerr := c.Get(ctx, k, "", name)
			if gerr != nil {
				return nil, gerr
			}
			obj, rv = got, got.GetResourceVersion()
		case err != nil:
			return nil, err
		default:
			return obj.(*api.Source), nil
		}
	}
}

// writeRequest writes the reconcile request (and the prune allowance) on
// the Source, guarded by the resourceVersion it read: on a conflict it
// reads again and writes again, with back-off and at most
// conflictAttempts times (retryLostRace, as apply does). The request is now, or just after the
// request already there when that is later, so that the annotation only
// moves forward and always asks for a sync the server has not started.
func writeRequest(ctx context.Context, c apiClient, k *api.Kind, name, allowPrune string) (api.Object, time.Time, error) {
	var allow any // null removes an allowance left from before
	if allowPrune != "" {
		allow = allowPrune
	}
	var (
		obj api.Object
		at  time.Time
	)
	err := retryLostRace(ctx, apierrors.IsConflict, func() error {
		live, err := c.Get(ctx, k, "", name)
		if err != nil {
			return err
		}
		at = timeNow().UTC()
		if prev, err := time.Parse(time.RFC3339Nano, live.GetAnnotations()[api.AnnotationReconcileRequestedAt]); err == nil && !at.After(prev) {
			at = prev.Add(time.Nanosecond)
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": live.GetResourceVersion(),
			"annotations": map[string]any{
				api.AnnotationReconcileRequestedAt: at.Format(time.RFC3339Nano),
				api.AnnotationAllowPrune:           allow,
			},
		}})
		if err != nil {
			return err
		}
		obj, err = c.Patch(ctx, k, "", name, patch)
		return err
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return obj, at, nil
}

// handledSince reports whether the server has answered a request made at
// at: its last handled request is that one or a later one. A handled
// value that is not a timestamp (written by hand) answers only itself.
func handledSince(src *api.Source, at time.Time) bool {
	handled := src.Status.LastHandledReconcileAt
	t, err := time.Parse(time.RFC3339Nano, handled)
	if err != nil {
		return handled == at.Format(time.RFC3339Nano)
	}
	return !t.Before(at)
}

// nextHandled follows a watch of the Source until it shows the request
// handled.
func nextHandled(ctx context.Context, w watcher, at time.Time, rv string) (api.Object, string, error) {
	for {
		e, err := w.Next(ctx)
		if err != nil {
			return nil, rv, err
		}
		switch e.Type {
		case watchDeleted:
			return nil, rv, fmt.Errorf("source %s was deleted", e.Object.GetName())
		case watchError:
			return nil, rv, errWatchClosed
		}
		if e.Object == nil {
			continue
		}
		rv = e.Object.GetResourceVersion()
		if src, ok := e.Object.(*api.Source); ok && handledSince(src, at) {
			return src, rv, nil
		}
	}
}

func readyCondition(src *api.Source) *metav1.Condition {
	return apimeta.FindStatusCondition(src.Status.Conditions, api.SourceReady)
}

func readyReason(src *api.Source) string {
	if c := readyCondition(src); c != nil {
		return c.Reason
	}
	return ""
}

// printSyncOutcome prints the revision and the Ready condition: on
// stdout when the revision was applied, on stderr (exit 1) when not.
func printSyncOutcome(stdout, stderr io.Writer, src *api.Source) error {
	c := readyCondition(src)
	if c == nil {
		return failed(fmt.Errorf("source %s has no Ready condition", src.Name))
	}
	rev := src.Status.LastAttemptedRevision
	if rev == "" {
		rev = table.None
	}
	if c.Status == metav1.ConditionTrue {
		fmt.Fprintf(stdout, "source/%s synced: revision %s\n%s\n", src.Name, rev, c.Message)
		return nil
	}
	fmt.Fprintf(stderr, "source/%s not synced (%s): revision %s\n%s\n", src.Name, c.Reason, rev, c.Message)
	return reportedFailure()
}
