package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/controlplane"
)

// snapshotReader is what `berth snapshot save` needs beyond apiClient:
// the stream of the store snapshot.
type snapshotReader interface {
	StoreSnapshot(ctx context.Context) (io.ReadCloser, error)
}

// StoreSnapshot asks the server for a copy of its store.
func (a *clientAPI) StoreSnapshot(ctx context.Context) (io.ReadCloser, error) {
	resp, err := a.c.Do(ctx, http.MethodGet, controlplane.SnapshotPath, nil, nil, "")
	if err != nil {
		return nil, apiError(err)
	}
	return resp.Body, nil
}

func newSnapshotCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot save|restore FILE",
		Short: "Back up the server's store, and restore it",
		Long: `Snapshot saves a consistent copy of a running server's store (the bolt
file state.db in its data dir) and puts one back in place of a stopped
server's store.

The copy is taken in one read transaction of the store: writes go on
meanwhile, and the copy holds every write the server acknowledged before
it began. A server on --store memory keeps nothing and has nothing to
save.`,
		Example: `  berth snapshot save /backup/berth-$(date +%F).db
  systemctl stop berth-server
  berth snapshot restore /backup/berth-2026-03-04.db --data-dir /var/lib/berth
  systemctl start berth-server`,
	}
	cmd.AddCommand(newSnapshotSaveCommand(g), newSnapshotRestoreCommand())
	return cmd
}

func newSnapshotSaveCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "save FILE",
		Short: "Save a copy of the running server's store to FILE",
		Long: `Save downloads a consistent copy of the running server's store, as the
admin (the kubeconfig's token must be the admin's), into FILE.tmp; it
fsyncs it and checks that it is a whole store of this berth (its pages,
format, buckets and every object) before it renames it to FILE. A copy
cut short, or one that does not check, is an error and leaves no FILE.
It prints the copy's revision and size.`,
		Example: `  berth snapshot save berth.db`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connectAPI(g)
			if err != nil {
				return failed(err)
			}
			sr, ok := c.(snapshotReader)
			if !ok {
				return failed(errors.New("this client cannot read snapshots"))
			}
			body, err := sr.StoreSnapshot(cmd.Context())
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), errorMessage(err))
				return reportedFailure()
			}
			defer body.Close()
			info, err := controlplane.WriteSnapshotFile(body, args[0])
			if err != nil {
				return failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Snapshot saved to %s: revision %d, %d bytes, %d objects\n", args[0], info.Revision, info.Size, info.Objects)
			return nil
		},
	}
}

func newSnapshotRestoreCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "restore FILE --data-dir DIR",
		Short: "Put a saved snapshot in place of a stopped server's store",
		Long: `Restore checks FILE as save does, moves the store of the data dir
(DIR/state.db) aside as state.db.before-restore-<UTC time>, and puts a copy
of FILE in its place. It works offline: it refuses while a server holds
the store; stop the server first, and start it after.

The restored store's revision is raised past the replaced one's, so that
every resourceVersion clients hold from before is older than the restored
store: their watches are answered 410 Gone and they list again. The data
dir's CA, tokens and keys are not in the snapshot and stay as they are.`,
		Example: `  berth snapshot restore berth.db --data-dir /var/lib/berth`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dataDir == "" {
				return usageErrorf("--data-dir is required")
			}
			if err := os.MkdirAll(dataDir, 0o700); err != nil {
				return failed(err)
			}
			res, err := controlplane.RestoreSnapshot(args[0], dataDir, time.Now())
			if err != nil {
				return failed(err)
			}
			out := cmd.OutOrStdout()
			if res.Kept != "" {
				fmt.Fprintf(out, "Kept the replaced store as %s\n", res.Kept)
			}
			fmt.Fprintf(out, "Restored %s into %s: revision %d, %d bytes, %d objects\n", args[0], dataDir, res.Revision, res.Size, res.Objects)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "the stopped server's data dir")
	return cmd
}
