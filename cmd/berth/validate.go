package main

import (
	"fmt"

	"github.com/berth-dev/berth/api"

	"github.com/spf13/cobra"
)

func newValidateCommand(g *globalOptions) *cobra.Command {
	var paths []string
	cmd := &cobra.Command{
		Use:   "validate -f FILE|DIR|-",
		Short: "Check manifests offline, listing every error",
		Long: `Validate decodes, defaults and validates manifests the way a source does,
without a server. Every error is printed on its own line to stdout as

  FILE:doc N (line L): FIELD.PATH: MESSAGE

sorted by file and document (N counts from 0, skipping empty documents);
a summary goes to stderr.

Custom resources are checked against the CustomResourceDefinitions found
among the same manifests, as the API server checks them: a served
version, the CRD's scope, and its schema (unknown fields, types, enums,
patterns, CEL rules). A custom resource whose CRD is not among them (or
is invalid) is not checked: each is named on stderr, and does not fail
the run. It exits 0 when every manifest is valid and 2
when one is not.`,
		Example: `  berth validate -f deploy/
  berth validate -f web.yaml -f db.yaml
  kustomize build . | berth validate -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runValidate(cmd, g, paths)
		},
	}
	cmd.Flags().StringArrayVarP(&paths, "filename", "f", nil, "manifest file, directory (recursive) or - for stdin; repeatable")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runValidate(cmd *cobra.Command, g *globalOptions, paths []string) error {
	files, problems, err := readManifests(paths, cmd.InOrStdin())
	if err != nil {
		return err
	}
	if len(files) == 0 && len(problems) == 0 {
		return usageErrorf("no manifests (*.yaml, *.yml, *.json) found in %v", paths)
	}
	for _, f := range files {
		g.logger.Debug("validating", "file", f.name, "bytes", len(f.data))
	}
	var objs []*api.Decoded
	errs := problems
	for _, f := range files {
		decoded, derrs := api.DecodeStream(f.name, f.data, api.DecodeOptions{DropStatus: true, ValidateRest: true, Kinds: api.UncheckedCustomKind})
		errs = append(errs, derrs...)
		objs = append(objs, decoded...)
	}
	verrs, unchecked := validateObjects(objs)
	errs = append(errs, verrs...)
	errs = append(errs, api.Duplicates(objs)...)
	errs.Sort()

	out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	for _, e := range errs {
		fmt.Fprintln(out, e.Error())
	}
	for _, u := range unchecked {
		fmt.Fprintln(stderr, u)
	}
	bad := map[string]bool{}
	for _, e := range errs {
		bad[e.File] = true
	}
	switch {
	case len(problems) > 0:
		fmt.Fprintf(stderr, "%s in %s; %s could not be read\n", plural(len(errs), "error"), plural(len(bad), "file"), plural(len(problems), "path"))
		return failed(fmt.Errorf("cannot read every manifest"))
	case len(errs) > 0:
		fmt.Fprintf(stderr, "%s in %d of %s\n", plural(len(errs), "error"), len(bad), plural(len(files), "file"))
		return invalidInput()
	}
	if len(unchecked) > 0 {
		fmt.Fprintf(stderr, "%s in %s valid, %s not checked\n", plural(len(objs)-len(unchecked), "object"), plural(len(files), "file"), plural(len(unchecked), "custom resource"))
		return nil
	}
	fmt.Fprintf(stderr, "%s in %s valid\n", plural(len(objs), "object"), plural(len(files), "file"))
	return nil
}

// plural renders a count with its noun: "1 error", "3 errors".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
