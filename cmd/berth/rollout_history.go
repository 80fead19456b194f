package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// annotationChangeCause is the annotation kubectl rollout history shows.
const annotationChangeCause = "kubernetes.io/change-cause"

// rolloutRevision is one template a workload rolled out: a Deployment's
// ReplicaSet or a StatefulSet's or DaemonSet's ControllerRevision.
type rolloutRevision struct {
	number   int64
	template *api.PodTemplateSpec
	// annotations are those of the ReplicaSet or ControllerRevision; a
	// Deployment takes them back on a rollback.
	annotations map[string]string
}

// rolloutHistory lists the revisions of a workload, the newest first.
func rolloutHistory(ctx context.Context, c apiClient, obj api.Object) ([]rolloutRevision, error) {
	var out []rolloutRevision
	owned := func(o api.Object) bool {
		ref := metav1.GetControllerOf(o)
		return ref != nil && ref.UID == obj.GetUID()
	}
	if _, ok := obj.(*api.Deployment); ok {
		objs, _, err := c.List(ctx, api.KindOf(&api.ReplicaSet{}), obj.GetNamespace(), listOptions{})
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			rs := o.(*api.ReplicaSet)
			n, err := strconv.ParseInt(rs.Annotations[api.AnnotationDeploymentRevision], 10, 64)
			if !owned(o) || err != nil || n <= 0 {
				continue
			}
			tmpl := rs.Spec.Template.DeepCopy()
			delete(tmpl.Labels, api.LabelPodTemplateHash)
			if len(tmpl.Labels) == 0 {
				tmpl.Labels = nil
			}
			out = append(out, rolloutRevision{number: n, template: tmpl, annotations: rs.Annotations})
		}
	} else {
		objs, _, err := c.List(ctx, api.KindOf(&api.ControllerRevision{}), obj.GetNamespace(), listOptions{})
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			r := o.(*api.ControllerRevision)
			if !owned(o) {
				continue
			}
			tmpl, err := r.Template()
			if err != nil {
				return nil, err
			}
			out = append(out, rolloutRevision{number: r.Revision, template: tmpl, annotations: r.Annotations})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].number > out[j].number })
	return out, nil
}

// rolloutHistoryOptions are the flags of `berth rollout history`.
type rolloutHistoryOptions struct {
	revision int64
}

func newRolloutHistoryCommand(g *globalOptions) *cobra.Command {
	o := &rolloutHistoryOptions{}
	cmd := &cobra.Command{
		Use:   "history (deploy|sts|ds)/NAME",
		Short: "List the revisions of a rollout",
		Long: `History lists the revisions a workload keeps, oldest first, with their
kubernetes.io/change-cause annotation, as kubectl rollout history does;
--revision prints the pod template of one.`,
		Example: `  berth rollout history deploy/web
  berth rollout history sts/db --revision 2`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := rolloutArg(args)
			if err != nil {
				return err
			}
			if o.revision < 0 {
				return usageErrorf("--revision must not be negative")
			}
			c, err := connectAPI(g)
			if err != nil {
				return failed(err)
			}
			obj, err := c.Get(cmd.Context(), ref.kind, g.namespace, ref.name)
			if err != nil {
				return failed(err)
			}
			hist, err := rolloutHistory(cmd.Context(), c, obj)
			if err != nil {
				return failed(err)
			}
			if err := printRolloutHistory(cmd.OutOrStdout(), ref, hist, o.revision); err != nil {
				return failed(err)
			}
			return nil
		},
	}
	cmd.Flags().Int64Var(&o.revision, "revision", 0, "print the pod template of this revision")
	return cmd
}

// printRolloutHistory prints kubectl's table of revisions, or the
// template of one.
func printRolloutHistory(out io.Writer, ref rolloutRef, hist []rolloutRevision, revision int64) error {
	if revision > 0 {
		for _, r := range hist {
			if r.number == revision {
				fmt.Fprintf(out, "%s with revision #%d\n", ref, revision)
				w := newDescribeWriter(out)
				describePodTemplate(w, r.template)
				return w.flush()
			}
		}
		return fmt.Errorf("unable to find the specified revision %d of %s", revision, ref)
	}
	fmt.Fprintln(out, ref)
	if len(hist) == 0 {
		fmt.Fprintln(out, "No rollout history found.")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
	for i := len(hist) - 1; i >= 0; i-- {
		cause := hist[i].annotations[annotationChangeCause]
		if cause == "" {
			cause = "<none>"
		}
		fmt.Fprintf(tw, "%d\t%s\n", hist[i].number, cause)
	}
	return tw.Flush()
}

// rolloutUndoOptions are the flags of `berth rollout undo`.
type rolloutUndoOptions struct {
	toRevision int64
}

func newRolloutUndoCommand(g *globalOptions) *cobra.Command {
	o := &rolloutUndoOptions{}
	cmd := &cobra.Command{
		Use:   "undo (deploy|sts|ds)/NAME",
		Short: "Roll a workload back to an earlier template",
		Long: `Undo puts back the pod template of the workload's previous revision (or
of --to-revision), read from the ReplicaSet (Deployment) or
ControllerRevision (StatefulSet, DaemonSet) that holds it; the workload
then rolls it out as any change, and the revision it returns to is
numbered anew. A workload applied from a source gets its template back
from the source at the next sync: undo in git there.`,
		Example: `  berth rollout undo deploy/web
  berth rollout undo sts/db --to-revision 3`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := rolloutArg(args)
			if err != nil {
				return err
			}
			return runRolloutUndo(cmd, g, o, ref)
		},
	}
	cmd.Flags().Int64Var(&o.toRevision, "to-revision", 0, "the revision to roll back to (0: the previous one)")
	return cmd
}

func runRolloutUndo(cmd *cobra.Command, g *globalOptions, o *rolloutUndoOptions, ref rolloutRef) error {
	if o.toRevision < 0 {
		return usageErrorf("--to-revision must not be negative")
	}
	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	ctx := cmd.Context()
	// The whole object is written back at the resourceVersion read, so a
	// template field the target lacks is dropped (a merge patch would keep
	// it) and a change in between is not silently undone: a conflict
	// reads again.
	for attempt := 0; ; attempt++ {
		obj, err := c.Get(ctx, ref.kind, g.namespace, ref.name)
		if err != nil {
			return failed(err)
		}
		hist, err := rolloutHistory(ctx, c, obj)
		if err != nil {
			return failed(err)
		}
		target, err := rollbackTarget(ref, hist, o.toRevision)
		if err != nil {
			return failed(err)
		}
		tmpl := podTemplateOf(obj)
		if equality.Semantic.DeepEqual(target.template, tmpl) {
			fmt.Fprintf(cmd.OutOrStdout(), "%s skipped rollback (current template already matches revision %d)\n", ref, target.number)
			return nil
		}
		*tmpl = *target.template
		if d, ok := obj.(*api.Deployment); ok {
			d.Annotations = rollbackAnnotations(d.Annotations, target.annotations)
		}
		_, err = c.Update(ctx, ref.kind, g.namespace, obj)
		if apierrors.IsConflict(err) && attempt < 5 {
			continue
		}
		if err != nil {
			return failed(err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s rolled back\n", ref)
		warnSourced(cmd, ref, obj, "undo the change")
		return nil
	}
}

// rollbackTarget picks the revision to go back to: toRevision, or the
// newest before the current one when it is 0. hist is newest first.
func rollbackTarget(ref rolloutRef, hist []rolloutRevision, toRevision int64) (rolloutRevision, error) {
	switch {
	case toRevision > 0:
		for _, r := range hist {
			if r.number == toRevision {
				return r, nil
			}
		}
		return rolloutRevision{}, fmt.Errorf("unable to find the specified revision %d of %s", toRevision, ref)
	case len(hist) < 2:
		return rolloutRevision{}, fmt.Errorf("no rollout history found for %s", ref)
	}
	return hist[1], nil
}

// rollbackAnnotations are a Deployment's annotations after a rollback to
// a ReplicaSet's, as kubectl's: the Deployment keeps its own
// (api.DeploymentOwnAnnotation) and takes the others from the ReplicaSet,
// where the controller copied them, its change-cause among them; one the
// ReplicaSet lacks goes.
func rollbackAnnotations(own, target map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range own {
		if api.DeploymentOwnAnnotation(k) {
			out[k] = v
		}
	}
	for k, v := range target {
		if !api.DeploymentOwnAnnotation(k) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
