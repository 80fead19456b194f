package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/api"
)

func newDiffCommand(g *globalOptions) *cobra.Command {
	var paths []string
	cmd := &cobra.Command{
		Use:   "diff -f FILE|DIR|-",
		Short: "Show what applying manifests would change",
		Long: `Diff reads manifests as apply does and prints, for every object that applying
them would change, a unified diff between the live object and the object
apply would make, as YAML:

  --- live/deployment.apps/default/web
  +++ merged/deployment.apps/default/web

An object that does not exist is diffed against nothing. Fields only the
server sets (uid, resourceVersion, generation, creationTimestamp,
managedFields, status) and the last-applied annotation are left out.

It exits 0 when nothing would change, 1 when something would, and 2 on an
error (an invalid manifest, the server unreachable or refusing a read).`,
		Example: `  berth diff -f deploy/
  kustomize build . | berth diff -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return diffError(runDiff(cmd, g, paths))
		},
	}
	cmd.Flags().StringArrayVarP(&paths, "filename", "f", nil, "manifest file, directory (recursive) or - for stdin; repeatable")
	_ = cmd.MarkFlagRequired("filename")
	cmd.AddCommand(newDiffSourceCommand(g))
	return cmd
}

// errDifferences ends a diff that found differences (exit 1).
var errDifferences = &exitError{code: exitFailure}

// diffError makes every failure of diff exit 2, as kubectl diff does: 1
// means differences.
func diffError(err error) error {
	var ee *exitError
	if err != errDifferences && errors.As(err, &ee) && ee.code == exitFailure {
		return &exitError{code: exitUsage, err: ee.err}
	}
	return err
}

func runDiff(cmd *cobra.Command, g *globalOptions, paths []string) error {
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
	failures, differ := 0, 0
	for _, d := range objs {
		k := d.kind
		ns, name := d.Object.GetNamespace(), d.Object.GetName()
		live, err := c.Get(cmd.Context(), k, ns, name)
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			fmt.Fprintln(stderr, errorMessage(err))
			failures++
			continue
		}
		owner := ""
		if live != nil {
			if owner, err = claimant(cmd.Context(), c, live); err != nil {
				fmt.Fprintln(stderr, errorMessage(err))
				failures++
				continue
			}
		}
		text, err := diffObject(k, d.Object, live, owner, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "error: %s: %v\n", objectRef(k, name), err)
			failures++
			continue
		}
		if text != "" {
			differ++
			fmt.Fprint(stdout, text)
		}
	}
	switch {
	case failures > 0:
		return invalidInput()
	case differ > 0:
		return errDifferences
	}
	return nil
}

// diffObject renders the unified diff between the live object (nil when
// absent) and what applying the manifest would make of it; "" when they
// are the same. claimant is the source that holds the live object against
// apply (see claimant), if any.
func diffObject(k *api.Kind, manifest, live api.Object, claimant string, notes io.Writer) (string, error) {
	manifest = manifest.DeepCopyObject().(api.Object)
	owner := string(api.SourceTypeAPI)
	if claimant != "" {
		fmt.Fprintf(notes, "note: %s is owned by source %q: berth apply would refuse to change it, and that source would revert it\n", objectRef(k, manifest.GetName()), claimant)
		owner = claimant
	}
	ann := manifest.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[api.AnnotationSource] = owner
	manifest.SetAnnotations(ann)
	plan, err := planApply(k, manifest, live)
	if err != nil {
		return "", err
	}
	from, err := diffDocument(k, live)
	if err != nil {
		return "", err
	}
	to, err := diffDocument(k, plan.desired)
	if err != nil {
		return "", err
	}
	if from == to {
		return "", nil
	}
	path := resourceName(k) + "/"
	if ns := manifest.GetNamespace(); ns != "" {
		path += ns + "/"
	}
	path += manifest.GetName()
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(from),
		B:        difflib.SplitLines(to),
		FromFile: "live/" + path,
		ToFile:   "merged/" + path,
		Context:  3,
	})
}

// diffLeftOut are the metadata fields only the server sets.
var diffLeftOut = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"}

// diffDocument renders an object as the YAML diff compares: without
// status, server-set metadata and the last-applied annotation; "" for
// none.
func diffDocument(k *api.Kind, obj api.Object) (string, error) {
	if obj == nil {
		return "", nil
	}
	doc, err := objectDocument(k, obj)
	if err != nil {
		return "", err
	}
	delete(doc, "status")
	if m, ok := doc["metadata"].(map[string]any); ok {
		for _, f := range diffLeftOut {
			delete(m, f)
		}
		if ann, ok := m["annotations"].(map[string]any); ok {
			delete(ann, api.AnnotationLastAppliedConfig)
			if len(ann) == 0 {
				delete(m, "annotations")
			}
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(out), "\n") + "\n", nil
}
