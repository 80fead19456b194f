package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

func newRolloutCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Follow or undo the rollout of a Deployment",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newRolloutStatusCommand(g), newRolloutUndoCommand(g))
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
		Use:   "status deploy/NAME",
		Short: "Wait for a Deployment's rollout to finish",
		Long: `Status prints the progress of a Deployment's rollout, as kubectl rollout
status does, until every replica runs the current template and is
available. It exits 0 once the rollout is done and 1 when it failed (its
progress deadline passed) or --timeout ran out first.`,
		Example: `  berth rollout status deploy/web
  berth rollout status deployment web --timeout 2m`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args)
			if err != nil {
				return err
			}
			return runRolloutStatus(cmd, g, o, name)
		},
	}
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", true, "wait for the rollout to finish; false prints the status once")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 0, "how long to wait (0: for ever)")
	return cmd
}

// rolloutUndoOptions are the flags of `berth rollout undo`.
type rolloutUndoOptions struct {
	toRevision int64
}

func newRolloutUndoCommand(g *globalOptions) *cobra.Command {
	o := &rolloutUndoOptions{}
	cmd := &cobra.Command{
		Use:   "undo deploy/NAME",
		Short: "Roll a Deployment back to an earlier template",
		Long: `Undo puts back the pod template of the Deployment's previous revision (or
of --to-revision), read from the ReplicaSet that ran it; the Deployment
then rolls it out as any change. A Deployment applied from a source gets
its template back from the source at the next sync: undo in git there.`,
		Example: `  berth rollout undo deploy/web
  berth rollout undo deploy/web --to-revision 3`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args)
			if err != nil {
				return err
			}
			return runRolloutUndo(cmd, g, o, name)
		},
	}
	cmd.Flags().Int64Var(&o.toRevision, "to-revision", 0, "the revision to roll back to (0: the previous one)")
	return cmd
}

// deploymentArg reads "deploy/NAME" or "deployment NAME": rollout knows
// Deployments only.
func deploymentArg(args []string) (string, error) {
	kind, name := "", ""
	switch {
	case len(args) == 2:
		kind, name = args[0], args[1]
	case strings.Contains(args[0], "/"):
		kind, name, _ = strings.Cut(args[0], "/")
	default:
		return "", usageErrorf("want deploy/NAME or deployment NAME, got %q", args[0])
	}
	k, err := lookupKind(kind)
	if err != nil {
		return "", usageErrorf("%v", err)
	}
	if k != api.KindOf(&api.Deployment{}) {
		return "", usageErrorf("rollout knows deployments only, not %s", k.Resource)
	}
	if name == "" {
		return "", usageErrorf("no deployment name in %q", strings.Join(args, " "))
	}
	return name, nil
}

// errRolloutFailed is a rollout that will not finish by itself.
var errRolloutFailed = errors.New("rollout failed")

// rolloutStatus reads a Deployment's progress as kubectl does: the message
// to print, whether the rollout is done, and errRolloutFailed (wrapped)
// when its progress deadline passed.
func rolloutStatus(d *api.Deployment) (string, bool, error) {
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

// reasonProgressDeadlineExceeded is the Progressing reason of a stuck
// rollout, as the deployment controller writes it.
const reasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"

func runRolloutStatus(cmd *cobra.Command, g *globalOptions, o *rolloutStatusOptions, name string) error {
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
	err = followRollout(ctx, c, g.namespace, name, o.watch, cmd.OutOrStdout())
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return failed(fmt.Errorf("timed out after %s waiting for deployment %q to roll out", o.timeout, name))
	case err != nil:
		return failed(err)
	}
	return nil
}

// followRollout prints each new status message until the rollout is done
// (or once, without watch).
func followRollout(ctx context.Context, c apiClient, ns, name string, watch bool, out io.Writer) error {
	k := api.KindOf(&api.Deployment{})
	last := ""
	for {
		obj, err := c.Get(ctx, k, ns, name)
		if err != nil {
			return err
		}
		rv := obj.GetResourceVersion()
		for {
			msg, done, err := rolloutStatus(obj.(*api.Deployment))
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
			next, nextRV, err := nextDeployment(ctx, c, k, ns, name, rv)
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

// nextDeployment waits for the next change of the Deployment after rv; nil
// when the watch ended cleanly.
func nextDeployment(ctx context.Context, c apiClient, k *api.Kind, ns, name, rv string) (api.Object, string, error) {
	w, err := c.Watch(ctx, k, ns, listOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: rv})
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
			return nil, "", fmt.Errorf("deployment %q was deleted", name)
		case watchAdded, watchModified:
			return ev.Object, ev.Object.GetResourceVersion(), nil
		}
	}
}

func runRolloutUndo(cmd *cobra.Command, g *globalOptions, o *rolloutUndoOptions, name string) error {
	if o.toRevision < 0 {
		return usageErrorf("--to-revision must not be negative")
	}
	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	ctx := cmd.Context()
	dk, rsk := api.KindOf(&api.Deployment{}), api.KindOf(&api.ReplicaSet{})
	obj, err := c.Get(ctx, dk, g.namespace, name)
	if err != nil {
		return failed(err)
	}
	d := obj.(*api.Deployment)
	objs, _, err := c.List(ctx, rsk, g.namespace, listOptions{})
	if err != nil {
		return failed(err)
	}
	var owned []*api.ReplicaSet
	for _, o := range objs {
		if ref := metav1.GetControllerOf(o); ref != nil && ref.UID == d.UID {
			owned = append(owned, o.(*api.ReplicaSet))
		}
	}
	target, rev, err := rollbackTarget(d, owned, o.toRevision)
	if err != nil {
		return failed(err)
	}
	tmpl := rollbackTemplate(d, target)
	if tmpl == nil {
		fmt.Fprintf(cmd.OutOrStdout(), "deployment.apps/%s skipped rollback (current template already matches revision %d)\n", name, rev)
		return nil
	}
	// A merge patch of the whole template and of the annotations that go
	// with it, guarded by the resourceVersion read, so that a change in
	// between is not silently undone.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": d.ResourceVersion, "annotations": rollbackAnnotations(d, target)},
		"spec":     map[string]any{"template": tmpl},
	})
	if err != nil {
		return failed(err)
	}
	if _, err := c.Patch(ctx, dk, g.namespace, name, patch); err != nil {
		return failed(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "deployment.apps/%s rolled back\n", name)
	if src := d.Annotations[api.AnnotationSource]; src != "" && src != string(api.SourceTypeAPI) {
		fmt.Fprintf(cmd.ErrOrStderr(), "Warning: deployment.apps/%s is applied from source %s: its next sync puts back the template the source holds; undo the change there to keep this one\n", name, src)
	}
	return nil
}

// rollbackTarget picks the ReplicaSet to go back to: that of revision
// toRevision, or of the newest revision before the current one when it is
// 0, and its revision.
func rollbackTarget(d *api.Deployment, rss []*api.ReplicaSet, toRevision int64) (*api.ReplicaSet, int64, error) {
	type entry struct {
		rev int64
		rs  *api.ReplicaSet
	}
	var hist []entry
	for _, rs := range rss {
		n, err := strconv.ParseInt(rs.Annotations[api.AnnotationDeploymentRevision], 10, 64)
		if err != nil || n <= 0 {
			continue
		}
		hist = append(hist, entry{n, rs})
	}
	sort.Slice(hist, func(i, j int) bool { return hist[i].rev > hist[j].rev })
	switch {
	case toRevision > 0:
		for i := range hist {
			if hist[i].rev == toRevision {
				return hist[i].rs, hist[i].rev, nil
			}
		}
		return nil, 0, fmt.Errorf("unable to find the specified revision %d of deployment %q", toRevision, d.Name)
	case len(hist) < 2:
		return nil, 0, fmt.Errorf("no rollout history found for deployment %q", d.Name)
	}
	return hist[1].rs, hist[1].rev, nil
}

// rollbackTemplate is the template of the ReplicaSet to go back to, or nil
// when the Deployment runs that template already.
func rollbackTemplate(d *api.Deployment, target *api.ReplicaSet) *api.PodTemplateSpec {
	tmpl := target.Spec.Template.DeepCopy()
	delete(tmpl.Labels, api.LabelPodTemplateHash)
	if len(tmpl.Labels) == 0 {
		tmpl.Labels = nil
	}
	if equality.Semantic.DeepEqual(tmpl, &d.Spec.Template) {
		return nil
	}
	return tmpl
}

// rollbackAnnotations is the merge patch of the Deployment's annotations
// for a rollback to target, as kubectl's: the Deployment keeps its own
// (api.DeploymentOwnAnnotation) and takes the others from the ReplicaSet,
// where the controller copied them, its change-cause among them; one the
// ReplicaSet lacks is removed.
func rollbackAnnotations(d *api.Deployment, target *api.ReplicaSet) map[string]any {
	patch := map[string]any{}
	for k := range d.Annotations {
		if !api.DeploymentOwnAnnotation(k) {
			patch[k] = nil
		}
	}
	for k, v := range target.Annotations {
		if !api.DeploymentOwnAnnotation(k) {
			patch[k] = v
		}
	}
	return patch
}
