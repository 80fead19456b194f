package main

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/api"
)

// Results apply prints, as kubectl does.
const (
	applyCreated    = "created"
	applyConfigured = "configured"
	applyUnchanged  = "unchanged"
)

func newApplyCommand(g *globalOptions) *cobra.Command {
	var paths []string
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Create or update objects from manifests through the API",
		Long: `Apply reads manifests as validate does and, when every one of them is valid,
creates the objects that do not exist and updates those that do, in
dependency order (Namespaces, StorageClasses, PersistentVolumes,
ServiceAccounts, ConfigMaps, Secrets, PersistentVolumeClaims, Services,
workloads, the rest). It prints one line per object:

  deployment.apps/web created|configured|unchanged

Objects are owned by the source "api" (annotation berth.dev/source: api);
an object that a git, dir or http source owns is not changed, since that
source would revert it, unless that Source has been deleted: then apply
takes the object over. An object another writer changes between apply's
read and its write is read and merged again, up to 5 times. Objects
without a namespace go to -n's. If any manifest is invalid, every error is
printed and nothing is written (exit 2); if the server refuses an object,
the others are still applied (exit 1).`,
		Example: `  berth apply -f deploy/
  kustomize build . | berth apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runApply(cmd, g, paths)
		},
	}
	cmd.Flags().StringArrayVarP(&paths, "filename", "f", nil, "manifest file, directory (recursive) or - for stdin; repeatable")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runApply(cmd *cobra.Command, g *globalOptions, paths []string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	objs, err := readForAPI(cmd, g, paths, true)
	if err != nil {
		return err
	}
	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	sort.SliceStable(objs, func(i, j int) bool {
		return api.ApplyRank(objs[i].kind) < api.ApplyRank(objs[j].kind)
	})
	failures := 0
	for _, d := range objs {
		k := d.kind
		result, err := applyObject(cmd.Context(), c, k, d.Object)
		if err != nil {
			fmt.Fprintln(stderr, applyErrorMessage(err, d.Decoded))
			failures++
			continue
		}
		fmt.Fprintf(stdout, "%s %s\n", objectRef(k, d.Object.GetName()), result)
	}
	if failures > 0 {
		return reportedFailure()
	}
	return nil
}

// readForAPI reads, decodes and checks the manifests -f names for apply
// (validate true: defaulted and validated as a source would) or delete
// (only decoded), each with the kind it is sent as (see manifest).
// Objects without a namespace go to -n's; an object whose namespace
// differs from an explicit -n is an error, as in kubectl. Every error is
// printed before anything is sent to the server.
func readForAPI(cmd *cobra.Command, g *globalOptions, paths []string, validate bool) ([]manifest, error) {
	files, problems, err := readManifests(paths, cmd.InOrStdin())
	if err != nil {
		return nil, err
	}
	if len(files) == 0 && len(problems) == 0 {
		return nil, usageErrorf("no manifests (*.yaml, *.yml, *.json) found in %v", paths)
	}
	explicit := cmd.Flags().Changed("namespace")
	prepare := func(m manifest) api.ErrorList {
		return placeInNamespace(m, g.namespace, explicit)
	}
	objs, errs := decodeManifests(files, validate, prepare, learnServedKinds(cmd.Context(), g))
	errs = append(problems, errs...)
	errs.Sort()
	stderr := cmd.ErrOrStderr()
	for _, e := range errs {
		fmt.Fprintln(stderr, e.Error())
	}
	switch {
	case len(problems) > 0:
		return nil, failed(fmt.Errorf("cannot read every manifest; nothing was sent to the server"))
	case len(errs) > 0:
		fmt.Fprintf(stderr, "%s; nothing was sent to the server\n", plural(len(errs), "error"))
		return nil, invalidInput()
	}
	return objs, nil
}

// placeInNamespace puts a namespaced object that names no namespace in
// the -n one, and refuses one that names another namespace than an
// explicit -n.
func placeInNamespace(m manifest, namespace string, explicit bool) api.ErrorList {
	d, k := m.Decoded, m.kind
	if k == nil || !k.Namespaced {
		return nil
	}
	ns := d.Object.GetNamespace()
	switch {
	case ns == "":
		d.Object.SetNamespace(namespace)
	case explicit && ns != namespace:
		return d.Errors(field.ErrorList{field.Invalid(field.NewPath("metadata", "namespace"), ns,
			fmt.Sprintf("does not match the namespace %q of --namespace; pass --namespace=%s or leave it out", namespace, ns))})
	}
	return nil
}

// applyObject creates the object or merges the manifest into the live
// one, reporting what it did. The update carries the resourceVersion the
// merge was computed from: a three-way merge is only right against the
// object it read, so on a conflict it reads the object again and merges
// anew rather than overwrite what the other writer wrote (a create that
// lost a race, AlreadyExists, reads the object the winner made), at most
// conflictAttempts times with back-off in between.
func applyObject(ctx context.Context, c apiClient, k *api.Kind, manifest api.Object) (string, error) {
	manifest = manifest.DeepCopyObject().(api.Object)
	ann := manifest.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[api.AnnotationSource] = string(api.SourceTypeAPI)
	manifest.SetAnnotations(ann)
	var result string
	err := retryLostRace(ctx, lostRace, func() error {
		var err error
		result, err = applyOnce(ctx, c, k, manifest)
		return err
	})
	return result, err
}

// lostRace reports whether err is another writer having changed the
// object between apply's read and its write.
func lostRace(err error) bool {
	var ae *applyError
	return errors.As(err, &ae) && (apierrors.IsConflict(ae.err) || apierrors.IsAlreadyExists(ae.err))
}

// applyOnce reads the live object and creates or updates it from the
// manifest.
func applyOnce(ctx context.Context, c apiClient, k *api.Kind, manifest api.Object) (string, error) {
	ns, name := manifest.GetNamespace(), manifest.GetName()
	live, err := c.Get(ctx, k, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		plan, err := planApply(k, manifest, nil)
		if err != nil {
			return "", err
		}
		if _, err := c.Create(ctx, k, ns, plan.desired); err != nil {
			return "", &applyError{verb: "creating", ref: objectRef(k, name), err: err}
		}
		return applyCreated, nil
	case err != nil:
		return "", &applyError{verb: "retrieving current configuration of", ref: objectRef(k, name), err: err}
	}
	owner, err := claimant(ctx, c, live)
	if err != nil {
		return "", &applyError{verb: "retrieving the source of", ref: objectRef(k, name), err: err}
	}
	if owner != "" {
		return "", fmt.Errorf("%s is owned by source %q, which would revert this change at its next sync; change it in that source", objectRef(k, name), owner)
	}
	plan, err := planApply(k, manifest, live)
	if err != nil {
		return "", err
	}
	if !plan.changed {
		return applyUnchanged, nil
	}
	if _, err := c.Update(ctx, k, ns, plan.desired); err != nil {
		return "", &applyError{verb: "updating", ref: objectRef(k, name), err: err}
	}
	return applyConfigured, nil
}

// claimant is the source that holds a live object against apply: the
// one its berth.dev/source names, unless that is api or a Source that no
// longer exists (a deleted Source's objects are anyone's to take, as the
// server's sources take them); "" when none does. A caller who may not
// read Sources (a read-only token in CI) cannot tell that one is gone, so
// for it the claim holds: apply refuses and diff notes the owner.
func claimant(ctx context.Context, c apiClient, live api.Object) (string, error) {
	owner := live.GetAnnotations()[api.AnnotationSource]
	if owner == "" || owner == string(api.SourceTypeAPI) {
		return "", nil
	}
	_, err := c.Get(ctx, api.KindOf(&api.Source{}), "", owner)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case apierrors.IsForbidden(err):
		return owner, nil
	case err != nil:
		return "", err
	}
	return owner, nil
}

// applyError says which step of applying an object failed.
type applyError struct {
	verb string
	ref  string // the object, as deployment.apps/web
	err  error
}

func (e *applyError) Error() string { return e.verb + ": " + e.err.Error() }
func (e *applyError) Unwrap() error { return e.err }

// applyErrorMessage renders a failed apply as kubectl does:
// `Error from server (Invalid): error when creating "web.yaml": …`, the
// server's message naming the object.
func applyErrorMessage(err error, d *api.Decoded) string {
	var ae *applyError
	if !errors.As(err, &ae) {
		return errorMessage(err)
	}
	var s apierrors.APIStatus
	if errors.As(ae.err, &s) {
		st := s.Status()
		return fmt.Sprintf("%s: error when %s %q: %s", serverErrorPrefix(st), ae.verb, d.File, st.Message)
	}
	// Not the server's answer: its message does not name the object.
	return fmt.Sprintf("Error: error when %s %s from %q: %v", ae.verb, ae.ref, d.File, ae.err)
}
