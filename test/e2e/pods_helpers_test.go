package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeAtomic replaces path with data by a rename, as an editor does, so
// that a watcher never reads half a file.
func writeAtomic(t *testing.T, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// applyText writes a manifest to a file of its own and applies it.
func (s *server) applyText(t *testing.T, manifest string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	s.mustBerth(t, "apply", "-f", path)
}

// podsOf lists the pods of app=name that are not being deleted.
func podsOf(t testing.TB, s *server, app string) ([]map[string]any, error) {
	list, err := s.getJSON(t, "pods", "-l", "app="+app)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	items, _ := list["items"].([]any)
	for _, it := range items {
		p := it.(map[string]any)
		if field(p, "metadata.deletionTimestamp") == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// containerStatus is the first container status of a pod.
func containerStatus(p map[string]any) map[string]any {
	statuses, _ := field(p, "status.containerStatuses").([]any)
	if len(statuses) == 0 {
		return nil
	}
	cs, _ := statuses[0].(map[string]any)
	return cs
}

// restartCount is the first container's restartCount, -1 when unknown.
func restartCount(p map[string]any) int {
	cs := containerStatus(p)
	if cs == nil {
		return -1
	}
	n, ok := cs["restartCount"].(float64)
	if !ok {
		return -1
	}
	return int(n)
}

// containerPID reads the pid of a container's process from the exec
// runtime's state.json under the agent's data dir, by the containerID the
// pod's status reports (berth-exec://<podUID>/<name>/<attempt>).
func containerPID(dataDir, containerID string) (int, error) {
	rel, ok := strings.CutPrefix(containerID, "berth-exec://")
	parts := strings.Split(rel, "/")
	if !ok || len(parts) != 3 {
		return 0, fmt.Errorf("containerID %q is not berth-exec://uid/name/attempt", containerID)
	}
	path := filepath.Join(dataDir, "pods", parts[0], "containers", parts[1], parts[2], "state.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var st struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return 0, fmt.Errorf("%s: %v", path, err)
	}
	if st.PID <= 0 {
		return 0, fmt.Errorf("%s: no pid", path)
	}
	return st.PID, nil
}
