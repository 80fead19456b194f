package agent

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/testtool"
)

// adminOf is an admin client of a control plane run by cptest.
func adminOf(t *testing.T, s *controlplane.Server) *client.Client {
	t.Helper()
	cfg, err := client.LoadKubeconfig(s.Credentials().Paths.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// An agent records the first store it meets; the same store is trusted to
// say which pods are gone, another one (emptied, replaced: a new UID) is
// not, and the agent says so in its log and in a Warning event on its
// Node.
func TestStoreIdentityGuardsOrphans(t *testing.T) {
	if testing.Short() {
		t.Skip("starts control planes")
	}
	joined := adminOf(t, cptest.Start(t, controlplane.Config{}))
	other := adminOf(t, cptest.Start(t, controlplane.Config{}))
	ctx := context.Background()
	dir := t.TempDir()
	var logs testtool.Buffer
	a := &Agent{cfg: Config{DataDir: dir, NodeName: "n1"}, log: slog.New(slog.NewTextHandler(&logs, nil))}
	testtool.WaitFor(t, 10*time.Second, "the first control plane", func() error { return a.recordStore(ctx, joined) })
	info, err := joined.StoreInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := loadStoreUID(dir); got != info.UID || got == "" {
		t.Fatalf("the agent recorded store %q, it joined %q", got, info.UID)
	}
	if err := a.storeTrusted(ctx, joined); err != nil {
		t.Fatalf("the store the agent joined: %v", err)
	}

	testtool.WaitFor(t, 10*time.Second, "the second control plane", func() error {
		_, err := other.StoreInfo(ctx)
		return err
	})
	err = a.storeTrusted(ctx, other)
	var changed *StoreChangedError
	if !errors.As(err, &changed) || changed.Joined != info.UID {
		t.Fatalf("another store: %v", err)
	}
	// A restarted agent keeps the store it joined.
	b := &Agent{cfg: Config{DataDir: dir, NodeName: "n1"}, log: slog.New(slog.DiscardHandler)}
	if b.storeUID, err = loadStoreUID(dir); err != nil {
		t.Fatal(err)
	}
	if err := b.storeTrusted(ctx, other); !errors.As(err, &changed) {
		t.Fatalf("another store, after a restart: %v", err)
	}
	// Registering with the other store does not record it, and says why
	// pods are kept.
	if err := a.recordStore(ctx, other); err != nil {
		t.Fatal(err)
	}
	if got, _ := loadStoreUID(dir); got != info.UID {
		t.Fatalf("the agent recorded store %q, it joined %q", got, info.UID)
	}
	if !strings.Contains(logs.String(), "not stopping running pods") {
		t.Errorf("the log does not say pods are kept:\n%s", logs.String())
	}
	objs, _, err := other.List(ctx, api.KindOf(&api.Event{}), api.NamespaceDefault, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range objs {
		e := o.(*api.Event)
		found = found || e.Reason == ReasonStoreChanged && e.Type == api.EventTypeWarning && e.InvolvedObject.Name == "n1" && strings.Contains(e.Message, info.UID)
	}
	if !found {
		t.Errorf("no %s event on node n1: %+v", ReasonStoreChanged, objs)
	}
	// The agent's record removed, it joins the store it meets.
	if err := os.Remove(filepath.Join(dir, storeUIDFile)); err != nil {
		t.Fatal(err)
	}
	c := &Agent{cfg: Config{DataDir: dir, NodeName: "n1"}, log: slog.New(slog.DiscardHandler)}
	if err := c.recordStore(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := c.storeTrusted(ctx, other); err != nil {
		t.Fatalf("the store met after the record was removed: %v", err)
	}
}
