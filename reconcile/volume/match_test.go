package volume

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

func pvOf(name, class, size string, modes ...api.PersistentVolumeAccessMode) *api.PersistentVolume {
	if len(modes) == 0 {
		modes = []api.PersistentVolumeAccessMode{api.ReadWriteOnce}
	}
	pv := &api.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: api.PersistentVolumeSpec{
			Capacity:               api.ResourceList{api.ResourceStorage: resource.MustParse(size)},
			PersistentVolumeSource: api.PersistentVolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/data/" + name}},
			AccessModes:            modes,
			StorageClassName:       class,
		},
	}
	api.Default(pv)
	pv.Status.Phase = api.VolumeAvailable
	return pv
}

func claimOf(name, class, size string, modes ...api.PersistentVolumeAccessMode) *api.PersistentVolumeClaim {
	if len(modes) == 0 {
		modes = []api.PersistentVolumeAccessMode{api.ReadWriteOnce}
	}
	c := &api.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: api.PersistentVolumeClaimSpec{
			AccessModes: modes,
			Resources:   api.VolumeResourceRequirements{Requests: api.ResourceList{api.ResourceStorage: resource.MustParse(size)}},
		},
	}
	if class != "-" {
		c.Spec.StorageClassName = &class
	}
	api.Default(c)
	return c
}

func TestMatch(t *testing.T) {
	block := api.PersistentVolumeBlock
	withLabels := func(pv *api.PersistentVolume, l map[string]string) *api.PersistentVolume {
		pv.Labels = l
		return pv
	}
	withBlock := func(pv *api.PersistentVolume) *api.PersistentVolume {
		pv.Spec.VolumeMode = &block
		return pv
	}
	onNode := func(pv *api.PersistentVolume, node string) *api.PersistentVolume {
		pv.Spec.NodeAffinity = hostnameAffinity(node)
		return pv
	}
	bound := func(pv *api.PersistentVolume) *api.PersistentVolume {
		pv.Spec.ClaimRef = &api.ObjectReference{Namespace: "default", Name: "other", UID: "x"}
		return pv
	}
	released := func(pv *api.PersistentVolume) *api.PersistentVolume {
		pv.Status.Phase = api.VolumeReleased
		return pv
	}
	node := func(name string) *api.Node {
		return &api.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{api.LabelHostname: name}}}
	}
	tests := []struct {
		name   string
		pvs    []*api.PersistentVolume
		claim  *api.PersistentVolumeClaim
		change func(*api.PersistentVolumeClaim)
		node   *api.Node
		want   string
	}{
		{name: "smallest that fits", pvs: []*api.PersistentVolume{pvOf("ten", "", "10Gi"), pvOf("five", "", "5Gi"), pvOf("one", "", "1Gi")},
			claim: claimOf("c", "", "4Gi"), want: "five"},
		{name: "exact size", pvs: []*api.PersistentVolume{pvOf("ten", "", "10Gi"), pvOf("four", "", "4Gi")},
			claim: claimOf("c", "", "4Gi"), want: "four"},
		{name: "none large enough", pvs: []*api.PersistentVolume{pvOf("ten", "", "10Gi")},
			claim: claimOf("c", "", "20Gi"), want: ""},
		{name: "same size ties by name", pvs: []*api.PersistentVolume{pvOf("b", "", "5Gi"), pvOf("a", "", "5Gi")},
			claim: claimOf("c", "", "5Gi"), want: "a"},
		{name: "class must be equal", pvs: []*api.PersistentVolume{pvOf("fast", "fast", "5Gi"), pvOf("slow", "slow", "10Gi")},
			claim: claimOf("c", "slow", "1Gi"), want: "slow"},
		{name: "no class matches only no class", pvs: []*api.PersistentVolume{pvOf("fast", "fast", "5Gi"), pvOf("none", "", "10Gi")},
			claim: claimOf("c", "-", "1Gi"), want: "none"},
		{name: "empty class is no class", pvs: []*api.PersistentVolume{pvOf("fast", "fast", "5Gi")},
			claim: claimOf("c", "", "1Gi"), want: ""},
		{name: "access modes must be covered", pvs: []*api.PersistentVolume{pvOf("rwo", "", "1Gi"), pvOf("rwx", "", "10Gi", api.ReadWriteOnce, api.ReadWriteMany)},
			claim: claimOf("c", "", "1Gi", api.ReadWriteMany), want: "rwx"},
		{name: "fewer modes win a tie", pvs: []*api.PersistentVolume{pvOf("a-wide", "", "1Gi", api.ReadWriteOnce, api.ReadOnlyMany), pvOf("b-narrow", "", "1Gi")},
			claim: claimOf("c", "", "1Gi"), want: "b-narrow"},
		{name: "smaller wins over fewer modes", pvs: []*api.PersistentVolume{pvOf("wide", "", "1Gi", api.ReadWriteOnce, api.ReadOnlyMany), pvOf("narrow", "", "2Gi")},
			claim: claimOf("c", "", "1Gi"), want: "wide"},
		{name: "no volume has the mode", pvs: []*api.PersistentVolume{pvOf("rwo", "", "1Gi")},
			claim: claimOf("c", "", "1Gi", api.ReadOnlyMany), want: ""},
		{name: "selector", pvs: []*api.PersistentVolume{pvOf("plain", "", "1Gi"), withLabels(pvOf("ssd", "", "5Gi"), map[string]string{"disk": "ssd"})},
			claim: claimOf("c", "", "1Gi"), change: func(c *api.PersistentVolumeClaim) {
				c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"disk": "ssd"}}
			}, want: "ssd"},
		{name: "selector matches none", pvs: []*api.PersistentVolume{pvOf("plain", "", "1Gi")},
			claim: claimOf("c", "", "1Gi"), change: func(c *api.PersistentVolumeClaim) {
				c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"disk": "ssd"}}
			}, want: ""},
		{name: "block claim wants block volume", pvs: []*api.PersistentVolume{pvOf("fs", "", "1Gi"), withBlock(pvOf("blk", "", "5Gi"))},
			claim: claimOf("c", "", "1Gi"), change: func(c *api.PersistentVolumeClaim) { c.Spec.VolumeMode = &block }, want: "blk"},
		{name: "filesystem claim skips block volume", pvs: []*api.PersistentVolume{withBlock(pvOf("blk", "", "1Gi")), pvOf("fs", "", "5Gi")},
			claim: claimOf("c", "", "1Gi"), want: "fs"},
		{name: "bound and released volumes are not available", pvs: []*api.PersistentVolume{bound(pvOf("a", "", "1Gi")), released(pvOf("b", "", "1Gi")), pvOf("c", "", "9Gi")},
			claim: claimOf("c", "", "1Gi"), want: "c"},
		{name: "selected node excludes volumes of other nodes", pvs: []*api.PersistentVolume{onNode(pvOf("n1", "", "1Gi"), "n1"), onNode(pvOf("n2", "", "5Gi"), "n2")},
			claim: claimOf("c", "", "1Gi"), node: node("n2"), want: "n2"},
		{name: "no node given: any node", pvs: []*api.PersistentVolume{onNode(pvOf("n1", "", "1Gi"), "n1")},
			claim: claimOf("c", "", "1Gi"), want: "n1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.change != nil {
				tt.change(tt.claim)
			}
			req, err := NewRequest(tt.claim, tt.node)
			if err != nil {
				t.Fatal(err)
			}
			x := NewIndex()
			for _, pv := range tt.pvs {
				x.Set(pv)
			}
			got := ""
			if pv := x.Match(req); pv != nil {
				got = pv.Name
				if why := req.Mismatch(pv); why != "" {
					t.Errorf("Match returned %s, which Mismatch rejects: %s", got, why)
				}
			}
			if got != tt.want {
				t.Errorf("Match = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestIndexTakesInOrder checks removal and re-adding: claims of one size
// take volumes smallest first, and a volume set again is found again.
func TestIndexTakesInOrder(t *testing.T) {
	x := NewIndex()
	for i := range 50 {
		x.Set(pvOf(fmt.Sprintf("pv-%02d", i), "", fmt.Sprintf("%dGi", 1+i%5)))
	}
	req, _ := NewRequest(claimOf("c", "", "1Gi"), nil)
	var last int64
	for i := range 50 {
		pv := x.Match(req)
		if pv == nil {
			t.Fatalf("take %d: nothing", i)
		}
		if s := volumeSize(pv); s < last {
			t.Fatalf("take %d: %s (%d) after a larger one (%d)", i, pv.Name, s, last)
		} else {
			last = s
		}
		x.Remove(pv.Name)
		if i == 10 {
			// A volume set again (freed) is available again.
			x.Set(pv)
			if got := x.Match(req); got == nil || got.Name != pv.Name {
				t.Fatalf("after setting %s again, Match = %v", pv.Name, got)
			}
			x.Remove(pv.Name)
		}
	}
	if pv := x.Match(req); pv != nil || x.Len() != 0 {
		t.Fatalf("after taking all: %v, %d left", pv, x.Len())
	}
}

// bindWorkload is 10,000 volumes and 10,000 claims of mixed sizes, classes
// and access modes, every claim satisfiable by some volume.
func bindWorkload() ([]*api.PersistentVolume, []*Request) {
	rng := rand.New(rand.NewPCG(1, 2))
	classes := []string{"", "fast", "slow", "local-path"}
	modes := [][]api.PersistentVolumeAccessMode{{api.ReadWriteOnce}, {api.ReadWriteOnce, api.ReadOnlyMany}, {api.ReadWriteMany}}
	const n = 10_000
	pvs := make([]*api.PersistentVolume, n)
	reqs := make([]*Request, n)
	for i := range n {
		class, m := classes[rng.IntN(len(classes))], modes[rng.IntN(len(modes))]
		size := 1 + rng.IntN(100)
		pvs[i] = pvOf(fmt.Sprintf("pv-%05d", i), class, fmt.Sprintf("%dGi", size), m...)
		// Each claim asks for at most its twin volume's size and modes.
		c := claimOf(fmt.Sprintf("claim-%05d", i), class, fmt.Sprintf("%dGi", 1+rng.IntN(size)), m[0])
		reqs[i], _ = NewRequest(c, nil)
	}
	return pvs, reqs
}

func TestBindWorkloadBindsAll(t *testing.T) {
	pvs, reqs := bindWorkload()
	x := NewIndex()
	for _, pv := range pvs {
		x.Set(pv)
	}
	taken := map[string]bool{}
	for i, r := range reqs {
		pv := x.Match(r)
		if pv == nil {
			t.Fatalf("claim %d found no volume with %d left", i, x.Len())
		}
		if why := r.Mismatch(pv); why != "" || taken[pv.Name] {
			t.Fatalf("claim %d got %s: %q, taken before: %v", i, pv.Name, why, taken[pv.Name])
		}
		taken[pv.Name] = true
		x.Remove(pv.Name)
	}
}

// BenchmarkBind10k matches 10,000 claims against 10,000 volumes of mixed
// sizes, classes and access modes through the index, taking each volume
// found: the binder's matching work for a cluster of that size.
func BenchmarkBind10k(b *testing.B) {
	pvs, reqs := bindWorkload()
	b.ReportAllocs()
	for b.Loop() {
		x := NewIndex()
		for _, pv := range pvs {
			x.Set(pv)
		}
		for _, r := range reqs {
			if pv := x.Match(r); pv != nil {
				x.Remove(pv.Name)
			}
		}
	}
}
