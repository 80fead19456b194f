package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/berth-dev/berth/agent/pods"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// The agent's part of local volumes: it makes a local-path volume's
// directory when a pod first uses it, and removes or wipes the directory
// of a released volume when the volume controller asks (the server cannot
// reach this node's disk).

// reclaimRetry is how often volumes waiting on this agent are looked at
// again after a failure, besides every change to them.
const reclaimRetry = 10 * time.Second

// localPathRoot is where local-path volumes of a node live: under the
// agent's data dir, next to its pods.
func localPathRoot(dataDir string) string { return filepath.Join(dataDir, "volumes") }

// claimDir is the directory of the volume bound to a claim, as a pod on
// node uses it. A volume with node affinity to another node is refused:
// its data is not here. A local-path volume's directory is made on first
// use.
func claimDir(pv *api.PersistentVolume, node string) (string, error) {
	dir := api.LocalVolumePath(pv)
	if dir == "" {
		return "", fmt.Errorf("persistentvolume %s: no hostPath or local path to use", pv.Name)
	}
	if n := api.LocalVolumeNode(pv); n != "" && n != node {
		return "", fmt.Errorf("persistentvolume %s lives on node %s, not on this node %s", pv.Name, n, node)
	}
	if pv.Annotations[api.AnnotationProvisionedBy] == api.LocalPathProvisioner {
		if api.LocalVolumeNode(pv) != node {
			return "", fmt.Errorf("persistentvolume %s: a local-path volume must name its node", pv.Name)
		}
		if err := safeVolumeDir(dir); err != nil {
			return "", fmt.Errorf("persistentvolume %s: %w", pv.Name, err)
		}
		if err := pods.MakeSharedDir(dir); err != nil {
			return "", fmt.Errorf("persistentvolume %s: %w", pv.Name, err)
		}
	}
	return dir, nil
}

// safeVolumeDir refuses paths no volume should be removed or made at: not
// absolute, not clean, or the root.
func safeVolumeDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || dir == "/" {
		return fmt.Errorf("unsafe volume path %q", dir)
	}
	return nil
}

// reclaimAction is what a volume asks of this node's agent.
type reclaimAction int

const (
	reclaimNone reclaimAction = iota
	// reclaimDelete: remove the directory, then the finalizer.
	reclaimDelete
	// reclaimRecycle: empty the directory, then say so.
	reclaimRecycle
)

// actionFor decides what the agent of node with local-path root must do
// for pv.
func actionFor(pv *api.PersistentVolume, node, root string) reclaimAction {
	if api.LocalVolumeNode(pv) != node || pv.Labels[api.LabelReclaimNode] != node || !api.LocalPathReclaimable(pv, root) {
		return reclaimNone
	}
	if pv.DeletionTimestamp != nil {
		if slices.Contains(pv.Finalizers, api.FinalizerLocalPath) {
			return reclaimDelete
		}
		return reclaimNone
	}
	if want := pv.Annotations[api.AnnotationRecycle]; want != "" && pv.Annotations[api.AnnotationRecycled] != want {
		return reclaimRecycle
	}
	return reclaimNone
}

// wipeDir removes everything inside dir, keeping dir; a missing dir is
// already empty.
func wipeDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// reclaimVolumes follows the volumes the controller labelled for this
// node and does what each asks, until ctx ends.
func (a *Agent) reclaimVolumes(ctx context.Context, c *client.Client) error {
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	inf := client.NewInformer(c, api.MustLookupResource("persistentvolumes"), client.InformerOptions{
		ListOptions: client.ListOptions{LabelSelector: api.LabelReclaimNode + "=" + a.cfg.NodeName},
		Clock:       a.cfg.Clock,
		Logger:      a.log,
	}, func(client.Event) { poke() })
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	defer wg.Wait()
	tick := a.cfg.Clock.NewTicker(reclaimRetry)
	defer tick.Stop()
	root := localPathRoot(a.cfg.DataDir)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-tick.C():
		}
		if !inf.HasSynced() {
			continue
		}
		for _, o := range inf.List() {
			pv, ok := o.(*api.PersistentVolume)
			if !ok {
				continue
			}
			if err := a.reclaimVolume(ctx, c, pv, root); err != nil {
				a.log.Warn("reclaim volume", "volume", pv.Name, "err", err)
			}
		}
	}
}

// reclaimVolume removes or wipes one volume's directory and tells the
// controller, through the volume, that it did.
func (a *Agent) reclaimVolume(ctx context.Context, c *client.Client, pv *api.PersistentVolume, root string) error {
	act := actionFor(pv, a.cfg.NodeName, root)
	if act == reclaimNone {
		return nil
	}
	dir := api.LocalVolumePath(pv)
	v := pv.DeepCopy()
	switch act {
	case reclaimDelete:
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
		v.Finalizers = slices.DeleteFunc(v.Finalizers, func(f string) bool { return f == api.FinalizerLocalPath })
	case reclaimRecycle:
		if err := wipeDir(dir); err != nil {
			return fmt.Errorf("wipe %s: %w", dir, err)
		}
		v.Annotations[api.AnnotationRecycled] = v.Annotations[api.AnnotationRecycle]
	}
	_, err := c.Update(ctx, v)
	if client.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update persistentvolume %s: %w", pv.Name, err)
	}
	a.log.Info("reclaimed volume", "volume", pv.Name, "dir", dir, "policy", pv.Spec.PersistentVolumeReclaimPolicy)
	return nil
}
