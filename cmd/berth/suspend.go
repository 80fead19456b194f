package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/api"
)

// newSuspendCommand is `berth suspend source NAME`: spec.suspend set, so
// that the source is neither fetched nor applied.
func newSuspendCommand(g *globalOptions) *cobra.Command {
	return newSuspendToggle(g, "suspend", true,
		"Stop syncing a source", "Suspend sets spec.suspend on the Source: nothing is fetched or applied until\n`berth resume source NAME`. What it applied keeps running, and changes made\noutside it are still reverted.")
}

// newResumeCommand is `berth resume source NAME`.
func newResumeCommand(g *globalOptions) *cobra.Command {
	return newSuspendToggle(g, "resume", false,
		"Sync a suspended source again", "Resume clears spec.suspend on the Source, which then fetches and applies at once.")
}

func newSuspendToggle(g *globalOptions, verb string, suspend bool, short, long string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   verb,
		Short: short,
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "source NAME",
		Aliases: []string{"src", "sources"},
		Short:   short,
		Long:    long,
		Example: fmt.Sprintf("  berth %s source fleet", verb),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connectAPI(g)
			if err != nil {
				return failed(err)
			}
			name := args[0]
			patch := fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend)
			if _, err := c.Patch(cmd.Context(), api.KindOf(&api.Source{}), "", name, patch); err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), errorMessage(err))
				return reportedFailure()
			}
			done := "suspended"
			if !suspend {
				done = "resumed"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "source/%s %s\n", name, done)
			return nil
		},
	})
	return cmd
}
