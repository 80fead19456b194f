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

	"github.com/berth-dev/berth/api"
)

func newRolloutCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Follow, restart, list or undo the rollout of a Deployment, StatefulSet or DaemonSet",
		Long: `Rollout manages the rollouts of the workloads that roll out a pod
template: Deployments (deploy), StatefulSets (sts) and DaemonSets (ds), as
kubectl rollout does. A Deployment's revisions are its ReplicaSets; a
StatefulSet's and a DaemonSet's are their ControllerRevisions.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newRolloutStatusCommand(g), newRolloutHistoryCommand(g),
		newRolloutUndoCommand(g), newRolloutRestartCommand(g))
	return cmd
}

// rolloutStatusOptions are the flags of `berth rollout status`.
type rolloutStatusOptions struct {
	watch   bool
	timeout time.Duration
}

func newRolloutStatusCommand(g *globalOptions) *cobra.Command {
	o := &rolloutStatusOptions{}
	cmd := &cobra.Command{
		Use:   "status (deploy|sts|ds)/NAME",
		Short: "Wait for a rollout to finish",
		Long: `Status prints the progress of a rollout, as kubectl rollout status does,
until every replica runs the current template and is available (for a
StatefulSet with a partition: every pod from the partition up). It exits
0 once the rollout is done and 1 when it failed (a Deployment's progress
deadline passed; a StatefulSet or DaemonSet that updates OnDelete has no
rollout to follow) or --timeout ran out first.`,
		Example: `  berth rollout status deploy/web
  berth rollout status statefulset db --timeout 2m
  berth rollout status ds/logs`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := rolloutArg(args)
			if err != nil {
				return err
			}
			return runRolloutStatus(cmd, g, o, ref)
		},
	}
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", true, "wait for the rollout to finish; false prints the status once")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 0, "how long to wait (0: for ever)")
	return cmd
}

func newRolloutRestartCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "restart (deploy|sts|ds)/NAME",
		Short: "Replace every pod of a workload by a rollout",
		Long: `Restart sets the annotation kubectl.kubernetes.io/restartedAt on the pod
template to the time now, as kubectl rollout restart does: the template
changed, the workload rolls it out as any change, within its update
strategy, and it is a revision of its own.`,
		Example: `  berth rollout restart deploy/web
  berth rollout restart sts/db`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := rolloutArg(args)
			if err != nil {
				return err
			}
			return runRolloutRestart(cmd, g, ref, time.Now())
		},
	}
}

// rolloutRef is the workload a rollout command names.
type rolloutRef struct {
	kind *api.Kind
	name string
}

// String is kubectl's name of the object: deployment.apps/web.
func (r rolloutRef) String() string {
	return r.kind.Singular + "." + r.kind.GVK.Group + "/" + r.name
}

// rolloutKinds are the kinds that roll out a pod template.
var rolloutKinds = map[*api.Kind]bool{
	api.KindOf(&api.Deployment{}):  true,
	api.KindOf(&api.StatefulSet{}): true,
	api.KindOf(&api.DaemonSet{}):   true,
}

// rolloutArg reads "KIND/NAME" or "KIND NAME" of a kind that rolls out.
func rolloutArg(args []string) (rolloutRef, error) {
	kind, name := "", ""
	switch {
	case len(args) == 2:
		kind, name = args[0], args[1]
	case strings.Contains(args[0], "/"):
		kind, name, _ = strings.Cut(args[0], "/")
	default:
		return rolloutRef{}, usageErrorf("want KIND/NAME or KIND NAME (deploy, sts or ds), got %q", args[0])
	}
	k, err := lookupKind(kind)
	if err != nil {
		return rolloutRef{}, usageErrorf("%v", err)
	}
	if !rolloutKinds[k] {
		return rolloutRef{}, usageErrorf("rollout knows deployments, statefulsets and daemonsets, not %s", k.Resource)
	}
	if name == "" {
		return rolloutRef{}, usageErrorf("no %s name in %q", k.Singular, strings.Join(args, " "))
	}
	return rolloutRef{kind: k, name: name}, nil
}

// errRolloutFailed is a rollout that will not finish by itself.
var errRolloutFailed = errors.New("rollout failed")

// rolloutStatus reads a workload's progress as kubectl's status viewers
// do: the message to print, whether the rollout is done, and
// errRolloutFailed (wrapped) when there is nothing more to wait for.
func rolloutStatus(obj api.Object) (string, bool, error) {
	switch o := obj.(type) {
	case *api.Deployment:
		return deploymentRolloutStatus(o)
	case *api.StatefulSet:
		return statefulSetRolloutStatus(o)
	case *api.DaemonSet:
		return daemonSetRolloutStatus(o)
	}
	return "", false, fmt.Errorf("%w: %T does not roll out", errRolloutFailed, obj)
}

func deploymentRolloutStatus(d *api.Deployment) (string, bool, error) {
	if d.Generation > d.Status.ObservedGeneration {
		return "Waiting for deployment spec update to be observed...", false, nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == api.DeploymentProgressing && c.Reason == reasonProgressDeadlineExceeded {
			return "", false, fmt.Errorf("%w: deployment %q exceeded its progress deadline", errRolloutFailed, d.Name)
		}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	switch {
	case st.UpdatedReplicas < want:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...", d.Name, st.UpdatedReplicas, want), false, nil
	case st.Replicas > st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...", d.Name, st.Replicas-st.UpdatedReplicas), false, nil
	case st.AvailableReplicas < st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...", d.Name, st.AvailableReplicas, st.UpdatedReplicas), false, nil
	}
	return fmt.Sprintf("deployment %q successfully rolled out", d.Name), true, nil
}

// statefulSetRolloutStatus follows kubectl: every replica ready, then
// with a partition the pods from it up updated, without one the update
// revision become the current one.
func statefulSetRolloutStatus(s *api.StatefulSet) (string, bool, error) {
	if s.Spec.UpdateStrategy.Type != api.RollingUpdateStatefulSetStrategyType {
		return "", false, fmt.Errorf("%w: rollout status is only available for %s strategy type", errRolloutFailed, api.RollingUpdateStatefulSetStrategyType)
	}
	st := s.Status
	if st.ObservedGeneration == 0 || s.Generation > st.ObservedGeneration {
		return "Waiting for statefulset spec update to be observed...", false, nil
	}
	want := int32(1)
	if s.Spec.Replicas != nil {
		want = *s.Spec.Replicas
	}
	if st.ReadyReplicas < want {
		return fmt.Sprintf("Waiting for %d pods to be ready...", want-st.ReadyReplicas), false, nil
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Partition != nil && st.UpdatedReplicas < want-*ru.Partition {
			return fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...", st.UpdatedReplicas, want-*ru.Partition), false, nil
		}
		return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...", st.UpdatedReplicas), true, nil
	}
	if st.UpdateRevision != st.CurrentRevision {
		return fmt.Sprintf("waiting for statefulset rolling update to complete %d pods at revision %s...", st.UpdatedReplicas, st.UpdateRevision), false, nil
	}
	return fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...", st.CurrentReplicas, st.CurrentRevision), true, nil
}

// daemonSetRolloutStatus follows kubectl: every node that should run the
// pod runs the current template, and it is available.
func daemonSetRolloutStatus(d *api.DaemonSet) (string, bool, error) {
	if d.Spec.UpdateStrategy.Type != api.RollingUpdateDaemonSetStrategyType {
		return "", false, fmt.Errorf("%w: rollout status is only available for %s strategy type", errRolloutFailed, api.RollingUpdateDaemonSetStrategyType)
	}
	st := d.Status
	if d.Generation > st.ObservedGeneration {
		return "Waiting for daemon set spec update to be observed...", false, nil
	}
	switch {
	case st.UpdatedNumberScheduled < st.DesiredNumberScheduled:
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...", d.Name, st.UpdatedNumberScheduled, st.DesiredNumberScheduled), false, nil
	case st.NumberAvailable < st.DesiredNumberScheduled:
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...", d.Name, st.NumberAvailable, st.DesiredNumberScheduled), false, nil
	}
	return fmt.Sprintf("daemon set %q successfully rolled out", d.Name), true, nil
}

// reasonProgressDeadlineExceeded is the Progressing reason of a stuck
// rollout, as the deployment controller writes it.
const reasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"

func runRolloutStatus(cmd *cobra.Command, g *globalOptions, o *rolloutStatusOptions, ref rolloutRef) error {
	if o.timeout < 0 {
		return usageErrorf("--timeout must not be negative")
	}
	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	ctx := cmd.Context()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	err = followRollout(ctx, c, g.namespace, ref, o.watch, cmd.OutOrStdout())
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return failed(fmt.Errorf("timed out after %s waiting for %s %q to roll out", o.timeout, ref.kind.Singular, ref.name))
	case err != nil:
		return failed(err)
	}
	return nil
}

// followRollout prints each new status message until the rollout is done
// (or once, without watch).
func followRollout(ctx context.Context, c apiClient, ns string, ref rolloutRef, watch bool, out io.Writer) error {
	last := ""
	for {
		obj, err := c.Get(ctx, ref.kind, ns, ref.name)
		if err != nil {
			return err
		}
		rv := obj.GetResourceVersion()
		for {
			msg, done, err := rolloutStatus(obj)
			if err != nil {
				return err
			}
			if msg != last {
				fmt.Fprintln(out, msg)
				last = msg
			}
			if done || !watch {
				return nil
			}
			next, nextRV, err := nextVersion(ctx, c, ref, ns, rv)
			if err != nil {
				return err
			}
			if next == nil {
				break // the watch ended: read again and watch on
			}
			obj, rv = next, nextRV
		}
	}
}

// nextVersion waits for the next change of the object after rv; nil when
// the watch ended cleanly.
func nextVersion(ctx context.Context, c apiClient, ref rolloutRef, ns, rv string) (api.Object, string, error) {
	w, err := c.Watch(ctx, ref.kind, ns, listOptions{FieldSelector: "metadata.name=" + ref.name, ResourceVersion: rv})
	if err != nil {
		return nil, "", err
	}
	defer w.Stop()
	for {
		ev, err := w.Next(ctx)
		switch {
		case errors.Is(err, errWatchClosed):
			return nil, "", nil
		case err != nil:
			return nil, "", err
		}
		switch ev.Type {
		case watchDeleted:
			return nil, "", fmt.Errorf("%s %q was deleted", ref.kind.Singular, ref.name)
		case watchAdded, watchModified:
			return ev.Object, ev.Object.GetResourceVersion(), nil
		}
	}
}

// annotationRestartedAt is the template annotation kubectl rollout restart
// sets.
const annotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

func runRolloutRestart(cmd *cobra.Command, g *globalOptions, ref rolloutRef, now time.Time) error {
	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	ctx := cmd.Context()
	obj, err := c.Get(ctx, ref.kind, g.namespace, ref.name)
	if err != nil {
		return failed(err)
	}
	if d, ok := obj.(*api.Deployment); ok && d.Spec.Paused {
		return failed(fmt.Errorf("can't restart paused deployment (run rollout resume first)"))
	}
	// A merge patch of the one annotation: nothing else the workload
	// holds is read and written back, so no write in between is undone.
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{annotationRestartedAt: now.Format(time.RFC3339)}},
	}}})
	if err != nil {
		return failed(err)
	}
	if _, err := c.Patch(ctx, ref.kind, g.namespace, ref.name, patch); err != nil {
		return failed(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s restarted\n", ref)
	warnSourced(cmd, ref, obj, "make the change")
	return nil
}

// podTemplateOf is the pod template a workload rolls out, to read or
// change in place.
func podTemplateOf(obj api.Object) *api.PodTemplateSpec {
	switch o := obj.(type) {
	case *api.Deployment:
		return &o.Spec.Template
	case *api.StatefulSet:
		return &o.Spec.Template
	case *api.DaemonSet:
		return &o.Spec.Template
	}
	return nil
}

// warnSourced warns that a change to a workload a source applies lasts
// only until the source's next sync.
func warnSourced(cmd *cobra.Command, ref rolloutRef, obj api.Object, what string) {
	if src := obj.GetAnnotations()[api.AnnotationSource]; src != "" && src != string(api.SourceTypeAPI) {
		fmt.Fprintf(cmd.ErrOrStderr(), "Warning: %s is applied from source %s: its next sync puts back the template the source holds; %s there to keep this one\n", ref, src, what)
	}
}
