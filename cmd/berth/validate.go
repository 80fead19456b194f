package main

import (
	"fmt"

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
a summary goes to stderr. It exits 0 when every manifest is valid and 2
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
	objs, errs := decodeManifests(files, nil)
	errs = append(problems, errs...)
	errs.Sort()

	out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	for _, e := range errs {
		fmt.Fprintln(out, e.Error())
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
