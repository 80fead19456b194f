package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/controlplane"
)

// newTreeCommand is `berth tree source NAME`: the objects a source owns,
// with their health, and those of the Sources it declares below them.
func newTreeCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tree",
		Short: "Show what a source owns",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "source NAME",
		Aliases: []string{"src", "sources"},
		Short:   "Show the objects a source owns and their health",
		Long: `Tree lists every object whose berth.dev/source annotation names the source,
by kind in apply order, each with its kstatus (Current, InProgress, Failed)
and why; a Source the source declares is followed by its own objects.`,
		Example: "  berth tree source fleet",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connectAPI(g)
			if err != nil {
				return failed(err)
			}
			owned, err := ownedObjects(cmd.Context(), c)
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), errorMessage(err))
				return reportedFailure()
			}
			root, err := c.Get(cmd.Context(), api.KindOf(&api.Source{}), "", args[0])
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), errorMessage(err))
				return reportedFailure()
			}
			printTree(cmd.OutOrStdout(), root, owned, "", map[string]bool{})
			return nil
		},
	})
	return cmd
}

// ownedObjects lists the objects of every kind that a source owns, by
// the source that owns them.
func ownedObjects(ctx context.Context, c apiClient) (map[string][]api.Object, error) {
	out := map[string][]api.Object{}
	for _, k := range api.Kinds() {
		if k == api.KindOf(&api.Event{}) {
			continue
		}
		objs, _, err := c.List(ctx, k, "", listOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", k.Resource, err)
		}
		for _, o := range objs {
			if owner := o.GetAnnotations()[api.AnnotationSource]; owner != "" && owner != string(api.SourceTypeAPI) {
				out[owner] = append(out[owner], o)
			}
		}
	}
	for _, objs := range out {
		slices.SortStableFunc(objs, func(a, b api.Object) int {
			if d := api.ApplyRank(api.KindOf(a)) - api.ApplyRank(api.KindOf(b)); d != 0 {
				return d
			}
			return strings.Compare(controlplane.HealthName(a), controlplane.HealthName(b))
		})
	}
	return out, nil
}

// printTree prints an object and, for a Source, what it owns below it.
func printTree(out io.Writer, obj api.Object, owned map[string][]api.Object, indent string, seen map[string]bool) {
	st, msg := controlplane.HealthOf(obj)
	line := fmt.Sprintf("%s  %s", controlplane.HealthName(obj), st)
	if msg != "" {
		line += "  " + msg
	}
	fmt.Fprintln(out, line)
	src, ok := obj.(*api.Source)
	if !ok || seen[src.Name] {
		return
	}
	seen[src.Name] = true
	children := owned[src.Name]
	for i, child := range children {
		branch, next := "├── ", "│   "
		if i == len(children)-1 {
			branch, next = "└── ", "    "
		}
		fmt.Fprint(out, indent+branch)
		printTree(out, child, owned, indent+next, seen)
	}
}
