package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

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

func TestStorageLimitExceeded(t *testing.T) {
	const mi = 1 << 20
	configMap := api.Volume{Name: "conf", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{}}}
	tests := []struct {
		name string
		s    PodStorage
		want string
	}{
		{name: "no limits", s: PodStorage{Pod: storagePod("p", []string{""}, emptyDir("scratch", "", "")),
			Volumes: map[string]int64{"scratch": 900 * mi}, Containers: map[string]int64{"c0": 900 * mi}}},
		{name: "pod total over the container's limit", s: PodStorage{Pod: storagePod("p", []string{"2Mi"}, emptyDir("scratch", "", "")),
			Volumes: map[string]int64{"scratch": 21 * mi}, Containers: map[string]int64{"c0": 4096}},
			want: "Pod ephemeral local storage usage exceeds the total limit of containers 2Mi."},
		{name: "at the limit is within it", s: PodStorage{Pod: storagePod("p", []string{"2Mi"}, emptyDir("scratch", "", "")),
			Volumes: map[string]int64{"scratch": 2*mi - 4096}, Containers: map[string]int64{"c0": 2048}, Other: 2048}},
		{name: "token and logs count toward the total", s: PodStorage{Pod: storagePod("p", []string{"1Mi"}),
			Containers: map[string]int64{"c0": mi}, Other: 1},
			want: "Pod ephemeral local storage usage exceeds the total limit of containers 1Mi."},
		{name: "limits summed over containers", s: PodStorage{Pod: storagePod("p", []string{"1Mi", "2Mi"}, emptyDir("scratch", "", "")),
			Volumes: map[string]int64{"scratch": 2*mi + 1}}},
		{name: "sum over", s: PodStorage{Pod: storagePod("p", []string{"1Mi", "2Mi"}, emptyDir("scratch", "", "")),
			Volumes: map[string]int64{"scratch": 3*mi + 1}},
			want: "Pod ephemeral local storage usage exceeds the total limit of containers 3Mi."},
		{name: "a container without a limit adds none, as the kubelet sums", s: PodStorage{Pod: storagePod("p", []string{"1Mi", ""}),
			Containers: map[string]int64{"c1": 2 * mi}},
			want: "Pod ephemeral local storage usage exceeds the total limit of containers 1Mi."},
		{name: "a memory emptyDir counts against memory", s: PodStorage{Pod: storagePod("p", []string{"1Mi"}, emptyDir("shm", api.StorageMediumMemory, "")),
			Volumes: map[string]int64{"shm": 50 * mi}}},
		{name: "a configMap counts", s: PodStorage{Pod: storagePod("p", []string{"1Mi"}, configMap),
			Volumes: map[string]int64{"conf": 2 * mi}},
			want: "Pod ephemeral local storage usage exceeds the total limit of containers 1Mi."},
		{name: "sizeLimit first", s: PodStorage{Pod: storagePod("p", []string{"1Mi"}, emptyDir("a", "", "10Mi"), emptyDir("b", "", "1Mi")),
			Volumes: map[string]int64{"a": 5 * mi, "b": mi + 1}},
			want: `Usage of EmptyDir volume "b" exceeds the limit "1Mi".`},
		{name: "sizeLimit of a memory emptyDir on disk", s: PodStorage{Pod: storagePod("p", nil, emptyDir("shm", api.StorageMediumMemory, "64Ki")),
			Volumes: map[string]int64{"shm": 65 << 10}},
			want: `Usage of EmptyDir volume "shm" exceeds the limit "64Ki".`},
		{name: "zero sizeLimit is none", s: PodStorage{Pod: storagePod("p", nil, emptyDir("a", "", "0")),
			Volumes: map[string]int64{"a": mi}}},
		{name: "container logs over its own limit", s: PodStorage{Pod: storagePod("p", []string{"", "1Mi"}),
			Containers: map[string]int64{"c1": mi + 1}},
			want: "Pod ephemeral local storage usage exceeds the total limit of containers 1Mi."},
		{name: "container limit alone, the total within the init container's", s: func() PodStorage {
			p := storagePod("p", []string{"1Mi"})
			p.Spec.InitContainers = []api.Container{{Name: "init", Resources: api.ResourceRequirements{
				Limits: api.ResourceList{api.ResourceEphemeralStorage: resource.MustParse("1Gi")}}}}
			return PodStorage{Pod: p, Containers: map[string]int64{"c0": 2 * mi}}
		}(), want: `Container c0 exceeded its local ephemeral storage limit "1Mi".`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StorageLimitExceeded(tt.s); got != tt.want {
				t.Errorf("StorageLimitExceeded = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHasStorageLimits(t *testing.T) {
	initLimited := storagePod("p", []string{""})
	initLimited.Spec.InitContainers = []api.Container{{Name: "init", Resources: api.ResourceRequirements{
		Limits: api.ResourceList{api.ResourceEphemeralStorage: resource.MustParse("1Gi")}}}}
	for _, tt := range []struct {
		name string
		pod  *api.Pod
		want bool
	}{
		{"none", storagePod("p", []string{""}, emptyDir("scratch", "", "")), false},
		{"a zero sizeLimit is none", storagePod("p", nil, emptyDir("scratch", "", "0")), false},
		{"a sizeLimit", storagePod("p", nil, emptyDir("scratch", "", "1Mi")), true},
		{"a container's limit", storagePod("p", []string{"", "1Mi"}), true},
		{"an init container's limit", initLimited, true},
	} {
		if got := hasStorageLimits(tt.pod); got != tt.want {
			t.Errorf("%s: hasStorageLimits = %v, want %v", tt.name, got, tt.want)
		}
	}
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

func TestPodManagerStorage(t *testing.T) {
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

func TestPodManagerStorageBudget(t *testing.T) {
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

func TestEvictionOverStorageLimits(t *testing.T) {
	const mi = 1 << 20
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	over := PodStorage{Pod: storagePod("over", []string{"2Mi"}, emptyDir("scratch", "", "")), Volumes: map[string]int64{"scratch": 21 * mi}}
	within := PodStorage{Pod: storagePod("within", []string{"2Mi"}), Containers: map[string]int64{"c0": mi}}
	static := PodStorage{Pod: storagePod("static", []string{"1Mi"}), Containers: map[string]int64{"c0": 2 * mi}, Static: true}
	sized := PodStorage{Pod: storagePod("sized", nil, emptyDir("s", "", "1Ki")), Volumes: map[string]int64{"s": 4096}}
	h := &evictionHarness{
		// Under memory pressure too: a storage eviction goes first, and
		// is the only one of its period.
		signals: Signals{MemoryAvailable: 80 * mi, MemoryCapacity: 4096 * mi, NodeFSAvailable: 50, NodeFSCapacity: 100},
		pods:    []PodUsage{{Pod: evictionPod("besteffort", ""), MemoryBytes: 10 * mi}},
	}
	var storage []PodStorage
	o := h.options(clk, DefaultEvictionHard)
	o.Storage = func(context.Context) []PodStorage {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.DeleteFunc(slices.Clone(storage), func(s PodStorage) bool { return slices.Contains(h.evicted, s.Pod.Name) })
	}
	storage = []PodStorage{over, within, static, sized}
	e := NewEvictionManager(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	testtool.WaitFor(t, 5*time.Second, "the storage evictions", func() error {
		if ev, _ := h.state(); len(ev) < 2 {
			return fmt.Errorf("evicted %v", ev)
		}
		if !clk.HasWaiters() {
			return errors.New("no ticker yet")
		}
		return nil
	})
	h.mu.Lock()
	evicted, messages := slices.Clone(h.evicted), slices.Clone(h.messages)
	h.mu.Unlock()
	wantMessages := []string{
		"Pod ephemeral local storage usage exceeds the total limit of containers 2Mi.",
		`Usage of EmptyDir volume "s" exceeds the limit "1Ki".`,
	}
	if !slices.Equal(evicted, []string{"over", "sized"}) || !slices.Equal(messages, wantMessages) {
		t.Fatalf("evicted %v with %q, want over and sized with %q", evicted, messages, wantMessages)
	}
	// The next period, with no pod over its limits, the node's pressure
	// takes its one pod.
	clk.Step(10 * time.Second)
	testtool.WaitFor(t, 5*time.Second, "the pressure eviction", func() error {
		if ev, _ := h.state(); !slices.Equal(ev, []string{"over", "sized", "besteffort"}) {
			return fmt.Errorf("evicted %v", ev)
		}
		return nil
	})
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
	if st.Phase != api.PodFailed || st.Reason != ReasonEvicted || st.Message != msg {
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
