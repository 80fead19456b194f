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
		return nil, err
	}
	return resp.Body, nil
}

func newSnapshotCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot save|restore|repair",
		Short: "Back up the server's store, restore it, and repair it",
		Long: `Snapshot saves a consistent copy of a running server's store (the bolt
file state.db in its data dir) and puts one back in place of a stopped
server's store; repair rewrites a stopped server's store without the
objects that cannot be read.

The copy is taken in one read transaction of the store: writes go on
meanwhile, and the copy holds every write the server acknowledged before
it began. A server on --store memory keeps nothing and has nothing to
save.`,
		Example: `  berth snapshot save /backup/berth-$(date +%F).db
  systemctl stop berth-server
  berth snapshot restore /backup/berth-2026-03-04.db --data-dir /var/lib/berth
  systemctl start berth-server`,
	}
	cmd.AddCommand(newSnapshotSaveCommand(g), newSnapshotRestoreCommand(), newSnapshotRepairCommand())
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
dir's CA, tokens and keys are not in the snapshot and stay as they are;
the data dir records the restored store's identity (store-uid), so that
the server starts on it.`,
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
			if err := controlplane.RecordStoreUID(dataDir, res.UID); err != nil {
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

func newSnapshotRepairCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "repair --data-dir DIR",
		Short: "Rewrite a stopped server's store without the objects that cannot be read",
		Long: `Repair rewrites the store of the data dir (DIR/state.db) with every
object that can be read, and leaves out those that cannot (a value that
is not its kind's JSON, which refuses the server's start), naming each.
It works offline and refuses while a server holds the store.

The replaced file is kept as state.db.before-repair-<UTC time>. The
repaired store keeps its identity, and its revision is raised by one, so
that clients list again and see the dropped objects gone; a controller or
source that made them makes them again. A store whose pages are damaged
cannot be repaired: restore a snapshot (berth snapshot restore). A store
with nothing to drop is left as it is.`,
		Example: `  systemctl stop berth-server
  berth snapshot repair --data-dir /var/lib/berth
  systemctl start berth-server`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				return usageErrorf("--data-dir is required")
			}
			res, err := controlplane.RepairStore(dataDir, time.Now())
			if err != nil {
				return failed(err)
			}
			out := cmd.OutOrStdout()
			if len(res.Dropped) == 0 {
				fmt.Fprintf(out, "Every object of the store of %s reads: nothing to repair\n", dataDir)
				return nil
			}
			for _, d := range res.Dropped {
				fmt.Fprintf(out, "Dropped %s %s: %s\n", d.Resource, d.Key, d.Reason)
			}
			fmt.Fprintf(out, "Kept the replaced store as %s\n", res.Kept)
			fmt.Fprintf(out, "Repaired %s: dropped %d objects, kept %d, revision %d\n", dataDir, len(res.Dropped), res.Objects, res.Revision)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "the stopped server's data dir")
	return cmd
}
