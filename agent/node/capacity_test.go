package node

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/api"
)

// renderResources writes a resource list as "name=quantity" sorted, for comparing.
func renderResources(l api.ResourceList) string {
	var parts []string
	for _, k := range []api.ResourceName{api.ResourceCPU, api.ResourceMemory, api.ResourcePods, api.ResourceEphemeralStorage} {
		if q, ok := l[k]; ok {
			parts = append(parts, string(k)+"="+q.String())
		}
	}
	return strings.Join(parts, ",")
}

func TestParseCapacity(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "cpu=4,memory=8Gi,pods=110,ephemeral-storage=20Gi", want: "cpu=4,memory=8Gi,pods=110,ephemeral-storage=20Gi"},
		{in: " cpu = 500m , memory=1G ", want: "cpu=500m,memory=1G"},
		{in: "cpu", err: `capacity "cpu": want name=quantity`},
		{in: "cpu=4,gpu=1", err: `capacity "gpu=1": unknown resource "gpu"`},
		{in: "memory=lots", err: `capacity "memory=lots": quantities must match`},
		{in: "cpu=-1", err: `capacity "cpu=-1": must not be negative`},
		{in: "pods=1.5", err: `capacity "pods=1.5": pods must be a whole number`},
		{in: "cpu=1,cpu=2", err: `capacity "cpu=2": cpu given twice`},
	}
	for _, tt := range tests {
		got, err := ParseCapacity(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseCapacity(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseCapacity(%q): %v", tt.in, err)
			continue
		}
		if r := renderResources(got); r != tt.want {
			t.Errorf("ParseCapacity(%q) = %s, want %s", tt.in, r, tt.want)
		}
	}
}

func TestMergeCapacity(t *testing.T) {
	detected, _ := ParseCapacity("cpu=8,memory=16Gi,pods=110")
	override, _ := ParseCapacity("cpu=2")
	if got := renderResources(MergeCapacity(detected, override)); got != "cpu=2,memory=16Gi,pods=110" {
		t.Errorf("merged = %s", got)
	}
}

func TestAllocatable(t *testing.T) {
	def, err := eviction.ParseThresholds(eviction.DefaultHard)
	if err != nil {
		t.Fatal(err)
	}
	quantities, _ := eviction.ParseThresholds("memory.available<1Gi,nodefs.available<5Gi")
	tests := []struct {
		name       string
		capacity   string
		thresholds []eviction.Threshold
		want       string
	}{
		{"defaults", "cpu=4,memory=8Gi,pods=110,ephemeral-storage=100Gi", def, "cpu=3900m,memory=7992Mi,pods=110,ephemeral-storage=90Gi"},
		{"no thresholds", "cpu=1,memory=1Gi", nil, "cpu=900m,memory=924Mi"},
		{"quantities", "memory=8Gi,ephemeral-storage=20Gi", quantities, "memory=7068Mi,ephemeral-storage=15Gi"},
		{"floored at zero", "cpu=50m,memory=150Mi", def, "cpu=0,memory=0"},
		{"missing resources stay missing", "pods=10", def, "pods=10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseCapacity(tt.capacity)
			if err != nil {
				t.Fatal(err)
			}
			before := renderResources(c)
			if got := renderResources(Allocatable(c, tt.thresholds)); got != tt.want {
				t.Errorf("Allocatable(%s) = %s, want %s", tt.capacity, got, tt.want)
			}
			if renderResources(c) != before {
				t.Errorf("capacity changed to %s", renderResources(c))
			}
		})
	}
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
		err  string
	}{
		{in: "", want: map[string]string{}},
		{in: "zone=a,berth.dev/role=edge", want: map[string]string{"zone": "a", "berth.dev/role": "edge"}},
		{in: "empty=", want: map[string]string{"empty": ""}},
		{in: "novalue", err: `label "novalue": want key=value`},
		{in: "bad key=x", err: `label "bad key=x": key:`},
		{in: "k=has space", err: `label "k=has space": value:`},
		{in: "k=" + strings.Repeat("v", 64), err: "value: must be no more than 63"},
		{in: "k=a,k=b", err: `key "k" given twice`},
		{in: "topology.kubernetes.io/zone=a,node.kubernetes.io/pool=x", want: map[string]string{"topology.kubernetes.io/zone": "a", "node.kubernetes.io/pool": "x"}},
		{in: "node-role.kubernetes.io/control-plane=", err: `label "node-role.kubernetes.io/control-plane=": a node may not set it`},
		{in: "node-restriction.kubernetes.io/pci=true", err: `a node may not set it`},
		{in: "kubernetes.io/trusted=yes", err: `a node may not set it`},
	}
	for _, tt := range tests {
		got, err := ParseLabels(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseLabels(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("ParseLabels(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseTaints(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "dedicated=gpu:NoSchedule,maintenance:NoExecute,soft=x:PreferNoSchedule", want: "dedicated=gpu:NoSchedule maintenance=:NoExecute soft=x:PreferNoSchedule"},
		{in: "a=b:NoSchedule,a=c:NoExecute", want: "a=b:NoSchedule a=c:NoExecute"},
		{in: "dedicated=gpu", err: `taint "dedicated=gpu": want key[=value]:effect`},
		{in: "k:Sometimes", err: `effect "Sometimes" is not`},
		{in: "bad key:NoSchedule", err: `taint "bad key:NoSchedule": key:`},
		{in: "k=bad value:NoSchedule", err: "value:"},
		{in: "k:NoSchedule,k=v:NoSchedule", err: "k:NoSchedule given twice"},
	}
	for _, tt := range tests {
		got, err := ParseTaints(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseTaints(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		var parts []string
		for _, x := range got {
			parts = append(parts, x.Key+"="+x.Value+":"+string(x.Effect))
		}
		if err != nil || strings.Join(parts, " ") != tt.want {
			t.Errorf("ParseTaints(%q) = %v, %v; want %s", tt.in, parts, err, tt.want)
		}
	}
}

func TestParseCPUMax(t *testing.T) {
	tests := []struct {
		in    string
		milli int64
		ok    bool
	}{
		{"max 100000\n", 0, false},
		{"150000 100000\n", 1500, true},
		{"200000 100000", 2000, true},
		{"50 100000", 1, true},
		{"garbage", 0, false},
		{"0 100000", 0, false},
	}
	for _, tt := range tests {
		milli, ok := parseCPUMax(tt.in)
		if milli != tt.milli || ok != tt.ok {
			t.Errorf("parseCPUMax(%q) = %d, %v; want %d, %v", tt.in, milli, ok, tt.milli, tt.ok)
		}
	}
}

// withMeminfo points the agent at a meminfo file of the test's.
func withMeminfo(t *testing.T, content string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	old := procMeminfo
	procMeminfo = p
	t.Cleanup(func() { procMeminfo = old })
}

func TestDetectCapacity(t *testing.T) {
	withMeminfo(t, "MemTotal:        8048576 kB\nMemFree:  100 kB\nMemAvailable:    4024288 kB\n")
	dir := t.TempDir()
	// A data dir not made yet is measured on its nearest parent.
	c, err := DetectCapacity(filepath.Join(dir, "not", "yet"))
	if err != nil {
		t.Fatal(err)
	}
	if m := c[api.ResourceMemory]; m.Value() != 8048576*1024 {
		t.Errorf("memory = %s, want %d", m.String(), 8048576*1024)
	}
	if p := c[api.ResourcePods]; p.Value() != DefaultMaxPods {
		t.Errorf("pods = %s", p.String())
	}
	if cpu := c[api.ResourceCPU]; cpu.MilliValue() <= 0 {
		t.Errorf("cpu = %s", cpu.String())
	}
	if s := c[api.ResourceEphemeralStorage]; s.Cmp(resource.MustParse("1Mi")) < 0 {
		t.Errorf("ephemeral-storage = %s", s.String())
	}
	sig, err := ReadSignals(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sig.MemoryAvailable != 4024288*1024 || sig.MemoryCapacity != 8048576*1024 {
		t.Errorf("memory signals = %d of %d", sig.MemoryAvailable, sig.MemoryCapacity)
	}
	if sig.NodeFSCapacity <= 0 || sig.NodeFSAvailable < 0 || sig.NodeFSAvailable > sig.NodeFSCapacity {
		t.Errorf("nodefs signals = %d of %d", sig.NodeFSAvailable, sig.NodeFSCapacity)
	}

	withMeminfo(t, "MemFree: 100 kB\n")
	if _, err := DetectCapacity(dir); err == nil || !strings.Contains(err.Error(), "no MemTotal") {
		t.Errorf("without MemTotal: %v", err)
	}
}
