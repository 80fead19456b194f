package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// getField reads one field of an object, "" when it is not there.
func (s *server) getField(t *testing.T, kind, name, path string) (string, error) {
	t.Helper()
	obj, err := s.getJSON(t, kind, name)
	if err != nil {
		return "", err
	}
	v, _ := field(obj, path).(string)
	return v, nil
}

// waitClaimBound waits until claim is Bound and returns its volume.
func waitClaimBound(t *testing.T, s *server, claim string) string {
	t.Helper()
	var volume string
	waitFor(t, 60*time.Second, "claim "+claim+" Bound", func() error {
		obj, err := s.getJSON(t, "pvc", claim)
		if err != nil {
			return err
		}
		if phase := field(obj, "status.phase"); phase != "Bound" {
			return fmt.Errorf("phase %v", phase)
		}
		volume, _ = field(obj, "spec.volumeName").(string)
		return nil
	})
	return volume
}

// podLogsContain waits until one Running pod of app logs want, and returns
// the pod and its node.
func podLogsContain(t *testing.T, s *server, app, want string) (pod, node string) {
	t.Helper()
	waitFor(t, 90*time.Second, "a pod of "+app+" logging "+want, func() error {
		pods, err := runningPods(t, s, app)
		if err != nil {
			return err
		}
		for name, v := range pods {
			out, _, _ := s.berth(t, "logs", name)
			if strings.Contains(out, want) {
				pod, node = name, strings.Fields(v)[0]
				return nil
			}
		}
		return fmt.Errorf("running %v", pods)
	})
	return pod, node
}

// volumeWriter is a Deployment (or, with deployment false, a Pod) whose
// container writes a note into its claim's directory if none is there, or
// says what note it found, then sleeps.
func volumeWriter(name, claim string, deployment bool) string {
	spec := fmt.Sprintf(`terminationGracePeriodSeconds: 2
containers:
- name: app
  image: berth
  command: ["/bin/sh", "-c", "if [ -f \"$BERTH_VOLUME_DATA/note\" ]; then echo \"found $(cat \"$BERTH_VOLUME_DATA/note\")\"; else echo \"from $POD_NAME\" > \"$BERTH_VOLUME_DATA/note\" && echo \"written by $POD_NAME\"; fi; exec sleep 3600"]
  env:
  - name: POD_NAME
    valueFrom: {fieldRef: {fieldPath: metadata.name}}
volumes:
- name: data
  persistentVolumeClaim: {claimName: %s}
`, claim)
	indent := func(s, pad string) string {
		return pad + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+pad) + "\n"
	}
	if !deployment {
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  labels: {app: %s}\nspec:\n%s", name, name, indent(spec, "  "))
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
%[2]s`, name, indent(spec, "      "))
}

func claimManifest(name, class, size string) string {
	cls := ""
	if class != "<default>" {
		cls = fmt.Sprintf("  storageClassName: %q\n", class)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
spec:
  accessModes: [ReadWriteOnce]
%s  resources:
    requests: {storage: %s}
`, name, cls, size)
}

// TestVolumesLocalPathAndBinding runs the volumes story of SPEC §7 with
// the binary and two agents: a local-path claim provisioned on the node
// of its pod and kept across pods, Delete and Retain on release, static
// volumes bound by size, and Recycle.
func TestVolumesLocalPathAndBinding(t *testing.T) {
	s := startServer(t)
	agents := map[string]*agent{
		"n2": startAgent(t, s, "n2", "127.0.0.2"),
		"n3": startAgent(t, s, "n3", "127.0.0.3"),
	}
	sc, err := s.getJSON(t, "sc", "local-path")
	if err != nil {
		t.Fatal(err)
	}
	if ann, _ := field(sc, "metadata.annotations").(map[string]any); ann["storageclass.kubernetes.io/is-default-class"] != "true" {
		t.Fatalf("StorageClass local-path annotations %v: want the default-class annotation", ann)
	}

	// A Deployment with a claim of the default class: the volume is made
	// on the node of the first pod, which writes a note there.
	s.applyText(t, claimManifest("data", "<default>", "1Gi"))
	if cls, err := s.getField(t, "pvc", "data", "spec.storageClassName"); err != nil || cls != "local-path" {
		t.Fatalf("claim class %q, %v: want the default local-path", cls, err)
	}
	s.applyText(t, volumeWriter("writer", "data", true))
	first, node := podLogsContain(t, s, "writer", "written by")
	volume := waitClaimBound(t, s, "data")
	dir := filepath.Join(agents[node].dataDir, "volumes", volume)
	note, err := os.ReadFile(filepath.Join(dir, "note"))
	if err != nil || strings.TrimSpace(string(note)) != "from "+first {
		t.Fatalf("note in %s: %q, %v", dir, note, err)
	}
	for name, a := range agents {
		if name == node {
			continue
		}
		if _, err := os.Stat(filepath.Join(a.dataDir, "volumes", volume)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("volume directory on the other node %s: %v", name, err)
		}
	}

	// Deleting the pod brings a new one on the same node, which reads
	// the note.
	s.mustBerth(t, "delete", "pod", first)
	second, node2 := podLogsContain(t, s, "writer", "found from "+first)
	if node2 != node || second == first {
		t.Fatalf("new pod %s on %s, want a new pod on %s", second, node2, node)
	}

	// Under Delete (the default class's policy), deleting the claim once
	// no pod uses it removes the volume and its directory.
	s.mustBerth(t, "delete", "deploy", "writer")
	waitFor(t, 60*time.Second, "writer pods gone", func() error {
		list, err := s.getJSON(t, "pods", "-l", "app=writer")
		if err != nil {
			return err
		}
		if items, _ := list["items"].([]any); len(items) > 0 {
			return fmt.Errorf("%d pods left", len(items))
		}
		return nil
	})
	s.mustBerth(t, "delete", "pvc", "data")
	waitFor(t, 60*time.Second, "volume "+volume+" and its directory gone", func() error {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("directory: %v", err)
		}
		if _, stderr, code := s.berth(t, "get", "pv", volume); code == 0 || !strings.Contains(stderr, "not found") {
			return fmt.Errorf("volume still there (%d %s)", code, stderr)
		}
		return nil
	})

	// Under Retain the volume is Released and keeps its data.
	s.applyText(t, `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: keep
provisioner: berth.dev/local-path
reclaimPolicy: Retain
volumeBindingMode: WaitForFirstConsumer
`)
	s.applyText(t, claimManifest("kept", "keep", "1Gi"))
	s.applyText(t, volumeWriter("keeper", "kept", false))
	_, keptNode := podLogsContain(t, s, "keeper", "written by keeper")
	kept := waitClaimBound(t, s, "kept")
	keptDir := filepath.Join(agents[keptNode].dataDir, "volumes", kept)
	s.mustBerth(t, "delete", "pod", "keeper")
	waitFor(t, 60*time.Second, "pod keeper gone", func() error {
		if _, _, code := s.berth(t, "get", "pod", "keeper"); code == 0 {
			return errors.New("still there")
		}
		return nil
	})
	s.mustBerth(t, "delete", "pvc", "kept")
	waitFor(t, 30*time.Second, "volume "+kept+" Released", func() error {
		phase, err := s.getField(t, "pv", kept, "status.phase")
		if err != nil {
			return err
		}
		if phase != "Released" {
			return fmt.Errorf("phase %q", phase)
		}
		return nil
	})
	if note, err := os.ReadFile(filepath.Join(keptDir, "note")); err != nil || strings.TrimSpace(string(note)) != "from keeper" {
		t.Fatalf("retained note: %q, %v", note, err)
	}

	// Static volumes: a 4Gi claim binds the 5Gi volume, not the 10Gi one;
	// a 20Gi claim waits until a 20Gi volume is applied.
	staticPV := func(name, size string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: %s
spec:
  capacity: {storage: %s}
  accessModes: [ReadWriteOnce]
  hostPath: {path: %s}
`, name, size, filepath.Join(t.TempDir(), name))
	}
	s.applyText(t, staticPV("pv5", "5Gi"))
	s.applyText(t, staticPV("pv10", "10Gi"))
	s.applyText(t, claimManifest("small", "", "4Gi"))
	if got := waitClaimBound(t, s, "small"); got != "pv5" {
		t.Fatalf("4Gi claim bound to %s, want pv5", got)
	}
	s.applyText(t, claimManifest("big", "", "20Gi"))
	waitFor(t, 30*time.Second, "a FailedBinding event on claim big", func() error {
		out, _, _ := s.berth(t, "describe", "pvc", "big")
		if !strings.Contains(out, "FailedBinding") {
			return fmt.Errorf("describe:\n%s", out)
		}
		return nil
	})
	if phase, err := s.getField(t, "pvc", "big", "status.phase"); err != nil || phase != "Pending" {
		t.Fatalf("20Gi claim %q, %v: want Pending", phase, err)
	}
	if phase, _ := s.getField(t, "pv", "pv10", "status.phase"); phase != "Available" {
		t.Errorf("pv10 %q, want Available", phase)
	}
	s.applyText(t, staticPV("pv20", "20Gi"))
	if got := waitClaimBound(t, s, "big"); got != "pv20" {
		t.Fatalf("20Gi claim bound to %s, want pv20", got)
	}

	// Under Recycle, n2's agent wipes the directory of a local volume
	// under its root and the volume is Available again.
	recycleDir := filepath.Join(agents["n2"].dataDir, "volumes", "scratch")
	if err := os.MkdirAll(filepath.Join(recycleDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(recycleDir, "sub", "old"), []byte("old data"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.applyText(t, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: scratch
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Recycle
  local: {path: %s}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [n2]}
`, recycleDir))
	s.applyText(t, claimManifest("tmp", "", "1Gi"))
	if got := waitClaimBound(t, s, "tmp"); got != "scratch" {
		t.Fatalf("1Gi claim bound to %s, want scratch", got)
	}
	s.mustBerth(t, "delete", "pvc", "tmp")
	waitFor(t, 30*time.Second, "volume scratch recycled and Available", func() error {
		phase, err := s.getField(t, "pv", "scratch", "status.phase")
		if err != nil {
			return err
		}
		if phase != "Available" {
			return fmt.Errorf("phase %q", phase)
		}
		return nil
	})
	entries, err := os.ReadDir(recycleDir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("recycled directory: %v, %v", entries, err)
	}
}
