package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// scratchFiller is a ReplicaSet of one pod limited to 2Mi of ephemeral
// storage, which writes 20M into its emptyDir and then waits.
const scratchFiller = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: filler
spec:
  replicas: 1
  selector:
    matchLabels: {app: filler}
  template:
    metadata:
      labels: {app: filler}
    spec:
      terminationGracePeriodSeconds: 30
      volumes:
      - name: scratch
        emptyDir: {}
      containers:
      - name: fill
        image: busybox
        command: ["/bin/sh", "-c", "dd if=/dev/zero of=\"$BERTH_VOLUME_SCRATCH/f\" bs=1M count=20 && exec sleep 3600"]
        resources:
          limits:
            ephemeral-storage: 2Mi
`

// TestEphemeralStorageLimitEvicts runs a pod that writes past its
// ephemeral-storage limit on a real agent: the agent evicts it (Failed,
// Evicted, the kubelet's message, a Warning event), gives its emptyDir
// back, and its ReplicaSet replaces it.
func TestEphemeralStorageLimitEvicts(t *testing.T) {
	s := startServer(t)
	a := startAgent(t, s, "eph", "127.0.0.70", "--housekeeping-interval", "1s")
	s.applyText(t, scratchFiller)

	const message = "Pod ephemeral local storage usage exceeds the total limit of containers 2Mi."
	var evicted, uid string
	waitFor(t, 60*time.Second, "the pod evicted", func() error {
		list, err := s.getJSON(t, "pods", "-l", "app=filler")
		if err != nil {
			return err
		}
		items, _ := list["items"].([]any)
		for _, it := range items {
			p := it.(map[string]any)
			if field(p, "status.phase") == "Failed" && field(p, "status.reason") == "Evicted" {
				if got := field(p, "status.message"); got != message {
					return fmt.Errorf("evicted with message %q, want %q", got, message)
				}
				evicted = field(p, "metadata.name").(string)
				uid = field(p, "metadata.uid").(string)
				return nil
			}
		}
		return fmt.Errorf("no evicted pod among %d", len(items))
	})
	waitFor(t, 30*time.Second, "its scratch space given back", func() error {
		if _, err := os.Stat(filepath.Join(a.dataDir, "pods", uid, "volumes", "scratch")); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("the evicted pod's emptyDir: %v", err)
		}
		return nil
	})
	waitFor(t, 30*time.Second, "the Evicted event", func() error {
		list, err := s.getJSON(t, "events")
		if err != nil {
			return err
		}
		items, _ := list["items"].([]any)
		for _, it := range items {
			e := it.(map[string]any)
			if field(e, "reason") == "Evicted" && field(e, "involvedObject.name") == evicted {
				if field(e, "type") != "Warning" || field(e, "message") != message {
					return fmt.Errorf("event %v", e)
				}
				return nil
			}
		}
		return fmt.Errorf("no Evicted event for %s among %d events", evicted, len(items))
	})
	waitFor(t, 30*time.Second, "a replacement pod", func() error {
		active, err := podsOf(t, s, "filler")
		if err != nil {
			return err
		}
		for _, p := range active {
			if field(p, "metadata.name") != evicted {
				return nil
			}
		}
		return fmt.Errorf("no pod but the evicted %s", evicted)
	})
}
