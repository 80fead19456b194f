package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

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
		if got := HasStorageLimits(tt.pod); got != tt.want {
			t.Errorf("%s: HasStorageLimits = %v, want %v", tt.name, got, tt.want)
		}
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
	o := h.options(clk, DefaultHard)
	o.Storage = func(context.Context) []PodStorage {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.DeleteFunc(slices.Clone(storage), func(s PodStorage) bool { return slices.Contains(h.evicted, s.Pod.Name) })
	}
	storage = []PodStorage{over, within, static, sized}
	e := New(o)
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
