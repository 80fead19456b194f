package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/internal/atomicfile"
)

// storeUIDFile, in the agent's data dir, records the identity of the
// control plane's store the agent joined (api.StoreInfo).
const storeUIDFile = "store-uid"

// ReasonStoreChanged is the Warning event on the Node when the control
// plane's store is not the one the agent joined, and the agent keeps
// running the pods it no longer holds.
const ReasonStoreChanged = "StoreChanged"

// StoreChangedError says that the control plane's store is not the one
// the agent joined: it was emptied and started afresh (--reset-store),
// or another store took its place. That store forgetting a pod says
// nothing of whether the pod should run, so the agent stops none for
// want of it.
type StoreChangedError struct {
	// Joined is the store the agent joined, Now the control plane's; File
	// is where the agent records the one it joined.
	Joined, Now, File string
}

func (e *StoreChangedError) Error() string {
	return fmt.Sprintf("the control plane's store is %s, not the store %s this agent joined (it was emptied or replaced): "+
		"running pods it does not hold are kept, not stopped. Restore the store from a snapshot (berth snapshot restore); "+
		"or, to stop what the new store does not hold, stop this agent, remove %s and start it again", e.Now, e.Joined, e.File)
}

// loadStoreUID reads the store the agent joined, "" before it joined one.
func loadStoreUID(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, storeUIDFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store identity: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// joinedStore is the store the agent joined.
func (a *Agent) joinedStore() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.storeUID
}

// recordStore reads the control plane's store identity once registered:
// the first one the agent meets is recorded as the one it joined; another
// one later is logged and recorded as a Warning event on the Node.
func (a *Agent) recordStore(ctx context.Context, c *client.Client) error {
	info, err := c.StoreInfo(ctx)
	if client.IsNotFound(err) || err == nil && info.UID == "" {
		return nil // a control plane that keeps no identity
	}
	if err != nil {
		return err
	}
	joined := a.joinedStore()
	if joined == "" {
		path := filepath.Join(a.cfg.DataDir, storeUIDFile)
		if err := atomicfile.WriteFile(path, []byte(info.UID+"\n"), 0o600); err != nil {
			return fmt.Errorf("store identity: %w", err)
		}
		a.mu.Lock()
		a.storeUID = info.UID
		a.mu.Unlock()
		a.log.Info("joined the control plane's store", "store", info.UID)
		return nil
	}
	if joined != info.UID {
		a.storeChanged(ctx, c, &StoreChangedError{Joined: joined, Now: info.UID, File: filepath.Join(a.cfg.DataDir, storeUIDFile)}, "")
	}
	return nil
}

// storeTrusted says whether the control plane's store is the one the
// agent joined, which must hold before the agent stops a running pod
// because that store does not hold it: nil when it is, or when either
// side keeps no identity; a *StoreChangedError when it is another; the
// error of asking when that failed.
func (a *Agent) storeTrusted(ctx context.Context, c *client.Client) error {
	joined := a.joinedStore()
	if joined == "" {
		return nil
	}
	info, err := c.StoreInfo(ctx)
	if client.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the control plane's store identity: %w", err)
	}
	if info.UID != joined {
		return &StoreChangedError{Joined: joined, Now: info.UID, File: filepath.Join(a.cfg.DataDir, storeUIDFile)}
	}
	return nil
}

// storeChanged logs why running pods the store does not hold are kept,
// and records it as a Warning event on the Node; pod names one of them,
// "" for all.
func (a *Agent) storeChanged(ctx context.Context, c *client.Client, err error, pod string) {
	msg := err.Error()
	if pod != "" {
		msg = "pod " + pod + " is kept running: " + msg
	}
	a.log.Error("not stopping running pods the control plane's store does not hold", "pod", pod, "err", err)
	node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: a.cfg.NodeName, UID: types.UID(a.cfg.NodeName)}}
	node.Kind, node.APIVersion = "Node", "v1"
	ctx, cancel := context.WithTimeout(ctx, client.DefaultTimeout)
	defer cancel()
	if err := RecordEvent(ctx, c, node, api.EventTypeWarning, ReasonStoreChanged, msg); err != nil {
		a.log.Warn("record event", "err", err)
	}
}
