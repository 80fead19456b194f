package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane"
)

// newDiffSourceCommand is `berth diff source NAME`: what the next sync of
// a source would change.
func newDiffSourceCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "source NAME",
		Aliases: []string{"src", "sources"},
		Short:   "Show what the next sync of a source would change",
		Long: `Diff source reads the source as its Source says (clones a git repository
into a temporary folder, reads a directory, gets a URL, with the
credentials of its spec.secretRef read through the API) and prints, for
every object the next sync would create, change or prune, a unified diff
between the live object and the one the sync would make.

A directory source is read from this machine's file system: run it where
the server runs. It exits 0 when nothing would change, 1 when something
would, and 2 on an error (an invalid revision, a source that cannot be
read).`,
		Example: "  berth diff source fleet",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return diffError(runDiffSource(cmd, g, args[0]))
		},
	}
}

func runDiffSource(cmd *cobra.Command, g *globalOptions, name string) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	c, err := connectAPI(g)
	if err != nil {
		return failed(err)
	}
	obj, err := c.Get(ctx, api.KindOf(&api.Source{}), "", name)
	if err != nil {
		fmt.Fprintln(stderr, errorMessage(err))
		return reportedFailure()
	}
	src := obj.(*api.Source)
	spec, err := controlplane.FetchSpec(ctx, name, src.Spec, func(ctx context.Context, kind, ns, name string) (map[string][]byte, error) {
		var obj api.Object
		var err error
		if kind == "ConfigMap" {
			obj, err = c.Get(ctx, api.KindOf(&api.ConfigMap{}), ns, name)
		} else {
			obj, err = c.Get(ctx, api.KindOf(&api.Secret{}), ns, name)
		}
		switch {
		case client.IsNotFound(err):
			return nil, fmt.Errorf("%w: %v", controlplane.ErrNotFound, err)
		case err != nil:
			return nil, err
		case kind == "ConfigMap":
			return controlplane.ConfigMapData(obj.(*api.ConfigMap)), nil
		}
		return obj.(*api.Secret).Data, nil
	})
	if err != nil {
		return failed(err)
	}
	cache, err := os.MkdirTemp("", "berth-diff-")
	if err != nil {
		return failed(err)
	}
	defer os.RemoveAll(cache)
	f, err := controlplane.NewFetcher(spec, filepath.Join(cache, "repo"), slog.New(slog.DiscardHandler))
	if err != nil {
		return failed(err)
	}
	rev := f.Fetch(ctx, "")
	f.Close()
	if rev.Err != nil {
		return failed(fmt.Errorf("read source %s: %w", name, rev.Err))
	}
	desired, errs := controlplane.PrepareRevision(name, rev.Objects, rev.Errors)
	if len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintf(stderr, "error: %s\n", e.Error())
		}
		return invalidInput()
	}
	fmt.Fprintf(stderr, "source %s: revision %s, %d objects (live: %s)\n", name, rev.ID, len(desired), orNone(src.Status.LastAppliedRevision))
	owned, err := ownedObjects(ctx, c)
	if err != nil {
		fmt.Fprintln(stderr, errorMessage(err))
		return reportedFailure()
	}
	wanted := map[string]bool{}
	differ, failures := 0, 0
	for _, d := range desired {
		k := d.Key.Kind
		wanted[d.Key.String()] = true
		live, err := c.Get(ctx, k, d.Key.Namespace, d.Key.Name)
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			fmt.Fprintln(stderr, errorMessage(err))
			failures++
			continue
		}
		// Prepare made d.Object: defaulted and marked as the source's.
		text, err := diffObject(k, d.Object, live, name, io.Discard)
		if err != nil {
			fmt.Fprintf(stderr, "error: %s: %v\n", d.Key, err)
			failures++
			continue
		}
		if text != "" {
			differ++
			fmt.Fprint(stdout, text)
		}
	}
	for _, live := range owned[name] {
		key := controlplane.KeyOf(live)
		if wanted[key.String()] || live.GetAnnotations()[api.AnnotationPrune] == api.PruneDisabled {
			continue
		}
		from, err := diffDocument(key.Kind, live)
		if err != nil {
			failures++
			continue
		}
		path := resourceName(key.Kind) + "/"
		if key.Namespace != "" {
			path += key.Namespace + "/"
		}
		path += key.Name
		text, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(from), FromFile: "live/" + path, ToFile: "pruned/" + path, Context: 3,
		})
		differ++
		fmt.Fprint(stdout, text)
	}
	switch {
	case failures > 0:
		return invalidInput()
	case differ > 0:
		return errDifferences
	}
	return nil
}
