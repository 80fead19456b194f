package pods

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// storagePod is a pod with the given containers' ephemeral-storage limits
// ("" for none) and volumes.
func storagePod(name string, limits []string, volumes ...api.Volume) *api.Pod {
	p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
	for i, l := range limits {
		c := api.Container{Name: fmt.Sprintf("c%d", i)}
		if l != "" {
			c.Resources.Limits = api.ResourceList{api.ResourceEphemeralStorage: resource.MustParse(l)}
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	p.Spec.Volumes = volumes
	return p
}

func emptyDir(name string, medium api.StorageMedium, sizeLimit string) api.Volume {
	e := &api.EmptyDirVolumeSource{Medium: medium}
	if sizeLimit != "" {
		q := resource.MustParse(sizeLimit)
		e.SizeLimit = &q
	}
	return api.Volume{Name: name, VolumeSource: api.VolumeSource{EmptyDir: e}}
}

// writeFile writes n bytes at path, making its directory.
func writeFile(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestManagerStorage(t *testing.T) {
	const mi = 1 << 20
	clk := clocktesting.NewFakeClock(testEpoch)
	dir := t.TempDir()
	// A test that ends early leaves no tmpfs mounted in the data dir,
	// which could then not be removed.
	t.Cleanup(func() { _ = unmountUnder(filepath.Join(podDir(dir, "u1"), "volumes")) })
	h := newHarness(t, clk, newFakeRuntime(clk), dir, &fakeRefs{})
	pod := workerPod("u1", "web", api.RestartPolicyAlways, "app", "side")
	pod.Spec.Containers[0].Resources.Limits = api.ResourceList{api.ResourceEphemeralStorage: resource.MustParse("1Gi")}
	pod.Spec.Volumes = []api.Volume{
		emptyDir("scratch", "", ""),
		emptyDir("shm", api.StorageMediumMemory, ""),
		{Name: "conf", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "cm"}, Optional: ptr(true)}}},
	}
	h.m.Sync(pod)
	// A pod with no limit to check is not measured: it has its emptyDir
	// too, but no walk of it could evict it.
	unlimited := workerPod("u2", "free", api.RestartPolicyAlways, "app")
	unlimited.Spec.Volumes = []api.Volume{emptyDir("scratch", "", "")}
	h.m.Sync(unlimited)
	app := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	h.waitRun(rid("u1", "side", 0), runtime.StateRunning)
	h.waitRun(rid("u2", "app", 0), runtime.StateRunning)
	h.rt.setDisk(app.ID, 3*mi)
	writeFile(t, filepath.Join(podVolumeDir(dir, "u1", "scratch"), "sub", "f"), 5*mi)
	writeFile(t, filepath.Join(podVolumeDir(dir, "u1", "shm"), "f"), 2*mi)
	writeFile(t, filepath.Join(serviceAccountDir(dir, "u1"), "token"), 1000)

	got := h.m.Storage(context.Background())
	if len(got) != 1 {
		t.Fatalf("storage of %d pods, want 1 (u2 has no limit)", len(got))
	}
	s := got[0]
	if s.Pod.UID != "u1" || s.Static || s.Partial {
		t.Errorf("pod %s static %v partial %v", s.Pod.UID, s.Static, s.Partial)
	}
	between := func(what string, n, lo, hi int64) {
		if n < lo || n > hi {
			t.Errorf("%s: %d bytes, want %d to %d", what, n, lo, hi)
		}
	}
	between("scratch", s.Volumes["scratch"], 5*mi, 5*mi+64<<10)
	between("shm", s.Volumes["shm"], 2*mi, 2*mi+64<<10)
	between("conf", s.Volumes["conf"], 0, 64<<10)
	between("token", s.Other, 1000, 64<<10)
	if s.Containers["app"] != 3*mi || s.Containers["side"] != 0 {
		t.Errorf("containers %v", s.Containers)
	}
	between("total (no shm)", s.Total(), 8*mi, 8*mi+256<<10)

	// An evicted pod is measured no more.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.m.Evict(ctx, "u1", "gone"); err != nil {
		t.Fatal(err)
	}
	if got := h.m.Storage(context.Background()); len(got) != 0 {
		t.Errorf("an evicted pod measured: %v", got)
	}
	// Its volumes are given back at once, the tmpfs the Memory volume may
	// have mounted unmounted; its token and logs stay.
	if _, err := os.Stat(filepath.Join(dir, "pods", "u1", "volumes")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the evicted pod's volumes: %v", err)
	}
	if _, err := os.Stat(filepath.Join(serviceAccountDir(dir, "u1"), "token")); err != nil {
		t.Errorf("the evicted pod's token: %v", err)
	}
	// Forgotten, its files go.
	h.m.Forget("u1")
	testtool.WaitFor(t, 5*time.Second, "the pod's files removed", func() error {
		if _, err := os.Stat(podDir(dir, "u1")); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("pod dir: %v", err)
		}
		return nil
	})
}

func TestManagerStorageBudget(t *testing.T) {
	clk := clocktesting.NewFakeClock(testEpoch)
	dir := t.TempDir()
	h := newHarness(t, clk, newFakeRuntime(clk), dir, &fakeRefs{})
	pod := workerPod("u1", "web", api.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []api.Volume{emptyDir("a", "", ""), emptyDir("b", "", "1Gi")}
	h.m.Sync(pod)
	h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	defer func(n int) { storageWalkBudget = n }(storageWalkBudget)
	storageWalkBudget = 20
	for i := range 30 {
		writeFile(t, filepath.Join(podVolumeDir(dir, "u1", "a"), fmt.Sprint(i/10), fmt.Sprint(i)), 0)
	}
	writeFile(t, filepath.Join(podVolumeDir(dir, "u1", "b"), "big"), 1<<20)
	got := h.m.Storage(context.Background())
	if len(got) != 1 || !got[0].Partial || got[0].Volumes["b"] != 0 {
		t.Fatalf("storage %+v, want a partial walk that stopped before b", got)
	}
}

func TestEvictRecordsEventAndTakesItsGrace(t *testing.T) {
	h, ev := newEventHarness(t)
	pod := workerPod("u1", "web", api.RestartPolicyAlways, "app")
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(60))
	h.m.Sync(pod)
	app := h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	const started = "Normal Started Started container app"
	ev.waitEvents(t, started)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	const msg = "Pod ephemeral local storage usage exceeds the total limit of containers 2Mi."
	if err := h.m.Evict(ctx, "u1", msg); err != nil {
		t.Fatal(err)
	}
	ev.waitEvents(t, started, "Warning Evicted "+msg, "Normal Killing Stopping container app")
	if stops := h.rt.stopsOf(app.ID); len(stops) != 1 || stops[0].grace != EvictionGrace {
		t.Errorf("stops %+v, want one with the eviction's grace %s", stops, EvictionGrace)
	}
	st, _ := h.rep.last("u1")
	if st.Phase != api.PodFailed || st.Reason != eviction.ReasonEvicted || st.Message != msg {
		t.Errorf("status phase %s reason %q message %q", st.Phase, st.Reason, st.Message)
	}
	// Evicted again (the next period measured it before it stopped): one
	// event only.
	if err := h.m.Evict(ctx, "u1", "again"); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if got := ev.all(); len(got) != 3 {
		t.Errorf("events %q", got)
	}
}
