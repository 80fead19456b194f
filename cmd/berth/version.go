package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set by goreleaser: -ldflags "-X main.version=… -X main.commit=… -X main.date=…".
var (
	version = "dev"
	commit  = "dev"
	date    = "dev"
)

// versionLine is what `berth version` prints (SPEC §1). A binary built
// with `go install` has no ldflags; it then reports what the Go toolchain
// recorded, when it recorded anything.
func versionLine() string {
	v, c := version, commit
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && c == "dev" && s.Value != "" {
				c = s.Value
			}
		}
	}
	return fmt.Sprintf("berth %s (%s, %s)", v, c, runtime.Version())
}

func newVersionCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of berth",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.logger.Debug("build", "version", version, "commit", commit, "date", date)
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}
