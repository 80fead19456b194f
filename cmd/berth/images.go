package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/agent/runtime/cri"
)

// imagesOptions say which node's containerd `berth images` speaks to.
type imagesOptions struct {
	dataDir  string
	endpoint string
}

// socket is containerd's socket: the endpoint's path, or the one of the
// containerd the agent of dataDir runs (--runtime containerd).
func (o *imagesOptions) socket() string {
	if o.endpoint != "" {
		return strings.TrimPrefix(o.endpoint, "unix://")
	}
	return filepath.Join(o.dataDir, "containerd", "containerd.sock")
}

func newImagesCommand(g *globalOptions) *cobra.Command {
	o := &imagesOptions{}
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Import and list the container images of this node's containerd",
		Long: `Import and list the images of the containerd a node's agent runs
(--runtime containerd), or of the one at --container-runtime-endpoint.

Image archives (docker save's docker-archive, or an oci-archive) can also
be put in <data-dir>/images/*.tar: the agent imports them each time it
starts containerd, so a node without a registry runs them (with
imagePullPolicy IfNotPresent or Never).`,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.dataDir, "data-dir", defaultAgentDataDir(), "the agent's data dir, whose containerd is spoken to (a server's embedded agent's is <server data dir>/agent)")
	f.StringVar(&o.endpoint, "container-runtime-endpoint", "", "containerd's socket instead, as unix:///run/containerd/containerd.sock")
	cmd.AddCommand(&cobra.Command{
		Use:   "import FILE...",
		Short: "Import image archives (docker-archive or oci-archive tar files)",
		Long: `Import image archives into containerd, where pods find them. It runs
containerd's own ctr (containerd's import is not part of the CRI), after
checking that each file is an image archive.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Minute)
			defer cancel()
			for _, f := range args {
				if _, err := cri.CheckImageArchive(f); err != nil {
					return err
				}
			}
			if err := cri.ImportImages(ctx, o.socket(), args...); err != nil {
				return err
			}
			for _, f := range args {
				fmt.Fprintf(cmd.OutOrStdout(), "imported %s\n", f)
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the images containerd holds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
			defer cancel()
			r, err := cri.New(ctx, cri.Options{Endpoint: "unix://" + o.socket(), PollPeriod: time.Hour})
			if err != nil {
				return err
			}
			defer r.Close()
			list, err := r.Images(ctx)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 3, ' ', 0)
			fmt.Fprintln(w, "IMAGE\tID\tSIZE")
			for _, im := range list {
				tags := im.Tags
				if len(tags) == 0 {
					tags = []string{"<none>"}
				}
				for _, tag := range tags {
					fmt.Fprintf(w, "%s\t%s\t%s\n", tag, shortImageID(im.ID), humanBytes(im.Size))
				}
			}
			return w.Flush()
		},
	})
	return cmd
}

func shortImageID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 13 {
		id = id[:13]
	}
	return id
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
