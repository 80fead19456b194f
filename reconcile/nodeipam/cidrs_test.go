package nodeipam

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"testing"
)

func TestNewRange(t *testing.T) {
	for _, tc := range []struct {
		cidr    string
		mask    int
		size    int
		wantErr string
	}{
		{"10.42.0.0/16", 24, 256, ""},
		{"10.42.7.9/16", 24, 256, ""}, // host bits are masked
		{"198.18.0.0/15", 24, 512, ""},
		{"198.18.0.0/24", 24, 1, ""},
		{"fd00:42::/56", 64, 256, ""},
		{"10.42.0.0/16", 8, 0, "shorter"},
		{"10.42.0.0/16", 33, 0, "longer than an address"},
		{"10.0.0.0/8", 25, 0, "more than 2^16"},
		{"10.42.0.0", 24, 0, "cluster CIDR"},
		{"::ffff:10.42.0.0/112", 120, 0, "IPv4-mapped"},
	} {
		r, err := NewRange(tc.cidr, tc.mask)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("NewRange(%s, %d) = %v, want error with %q", tc.cidr, tc.mask, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("NewRange(%s, %d): %v", tc.cidr, tc.mask, err)
			continue
		}
		if r.Size() != tc.size {
			t.Errorf("NewRange(%s, %d).Size() = %d, want %d", tc.cidr, tc.mask, r.Size(), tc.size)
		}
	}
}

func TestSubnet(t *testing.T) {
	r4, _ := NewRange("198.18.0.0/15", 24)
	r6, _ := NewRange("fd00:42::/56", 64)
	for _, tc := range []struct {
		r    *Range
		i    int
		want string
	}{
		{r4, 0, "198.18.0.0/24"},
		{r4, 1, "198.18.1.0/24"},
		{r4, 256, "198.19.0.0/24"},
		{r4, 511, "198.19.255.0/24"},
		{r6, 0, "fd00:42::/64"},
		{r6, 255, "fd00:42:0:ff::/64"},
	} {
		if got := tc.r.Subnet(tc.i).String(); got != tc.want {
			t.Errorf("%s.Subnet(%d) = %s, want %s", tc.r, tc.i, got, tc.want)
		}
		if got := tc.r.index(tc.r.Subnet(tc.i).Addr()); got != tc.i {
			t.Errorf("%s.index(Subnet(%d)) = %d", tc.r, tc.i, got)
		}
	}
}

func TestAllocate(t *testing.T) {
	// Four node ranges: 198.18.0.0/24 … 198.18.3.0/24.
	r, err := NewRange("198.18.0.0/22", 24)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		nodes    []Node
		assign   map[string]string
		rejected map[string]string // node → part of the error
	}{
		{
			name:   "lowest free, in order",
			nodes:  []Node{{Name: "a"}, {Name: "b"}},
			assign: map[string]string{"a": "198.18.0.0/24", "b": "198.18.1.0/24"},
		},
		{
			name:   "ranges held are skipped",
			nodes:  []Node{{Name: "a", PodCIDR: "198.18.0.0/24"}, {Name: "b"}, {Name: "c", PodCIDR: "198.18.1.0/24"}},
			assign: map[string]string{"b": "198.18.2.0/24"},
		},
		{
			name:   "a freed range is taken again",
			nodes:  []Node{{Name: "a", PodCIDR: "198.18.0.0/24"}, {Name: "c", PodCIDR: "198.18.2.0/24"}, {Name: "d"}},
			assign: map[string]string{"d": "198.18.1.0/24"},
		},
		{
			name:   "a user's range inside the cluster CIDR and free is honoured",
			nodes:  []Node{{Name: "a"}, {Name: "u", PodCIDR: "198.18.0.0/24"}},
			assign: map[string]string{"a": "198.18.1.0/24"},
		},
		{
			name:   "a wider user range occupies every node range it covers",
			nodes:  []Node{{Name: "u", PodCIDR: "198.18.0.0/23"}, {Name: "a"}},
			assign: map[string]string{"a": "198.18.2.0/24"},
		},
		{
			name:   "a narrower user range occupies the node range holding it",
			nodes:  []Node{{Name: "u", PodCIDR: "198.18.0.128/25"}, {Name: "a"}},
			assign: map[string]string{"a": "198.18.1.0/24"},
		},
		{
			name:     "overlap: the later node is rejected",
			nodes:    []Node{{Name: "a", PodCIDR: "198.18.1.0/24"}, {Name: "b", PodCIDR: "198.18.1.0/24"}, {Name: "c", PodCIDR: "198.18.0.0/23"}},
			assign:   map[string]string{},
			rejected: map[string]string{"b": "overlaps node a's", "c": "overlaps node a's"},
		},
		{
			name:     "outside the cluster CIDR",
			nodes:    []Node{{Name: "a", PodCIDR: "198.19.0.0/24"}, {Name: "b", PodCIDR: "198.18.0.0/16"}, {Name: "c", PodCIDR: "fd00::/64"}},
			assign:   map[string]string{},
			rejected: map[string]string{"a": "outside the cluster CIDR", "b": "outside", "c": "outside"},
		},
		{
			name:     "not a CIDR",
			nodes:    []Node{{Name: "a", PodCIDR: "198.18.0.0"}, {Name: "b"}},
			assign:   map[string]string{"b": "198.18.0.0/24"},
			rejected: map[string]string{"a": "not a CIDR"},
		},
		{
			name:     "exhausted",
			nodes:    []Node{{Name: "a"}, {Name: "b"}, {Name: "c", PodCIDR: "198.18.3.0/24"}, {Name: "d"}, {Name: "e"}},
			assign:   map[string]string{"a": "198.18.0.0/24", "b": "198.18.1.0/24", "d": "198.18.2.0/24"},
			rejected: map[string]string{"e": "no pod CIDR left"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := r.Allocate(tc.nodes)
			got := map[string]string{}
			for n, p := range plan.Assign {
				got[n] = p.String()
			}
			if !maps.Equal(got, tc.assign) {
				t.Errorf("assigned %v, want %v", got, tc.assign)
			}
			if len(plan.Rejected) != len(tc.rejected) {
				t.Errorf("rejected %v, want %v", plan.Rejected, tc.rejected)
			}
			for n, want := range tc.rejected {
				if err := plan.Rejected[n]; err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("node %s rejected with %v, want %q", n, err, want)
				}
			}
			// The plan applied, a second run assigns nothing.
			var again []Node
			for _, n := range tc.nodes {
				if p, ok := plan.Assign[n.Name]; ok {
					n.PodCIDR = p.String()
				}
				again = append(again, n)
			}
			if second := r.Allocate(again); len(second.Assign) != 0 {
				t.Errorf("second run assigned %v", second.Assign)
			}
		})
	}
}

func TestAllocateExhaustedIsErrExhausted(t *testing.T) {
	r, _ := NewRange("198.18.0.0/24", 24)
	plan := r.Allocate([]Node{{Name: "a"}, {Name: "b"}})
	if !errors.Is(plan.Rejected["b"], ErrExhausted) {
		t.Fatalf("b: %v, want ErrExhausted", plan.Rejected["b"])
	}
	if plan.Assign["a"] != netip.MustParsePrefix("198.18.0.0/24") {
		t.Fatalf("a: %v", plan.Assign["a"])
	}
}

// FuzzAllocate gives the allocator whatever a user may write in
// spec.podCIDR: it never panics, never assigns a range twice, and assigns
// only ranges of the cluster CIDR.
func FuzzAllocate(f *testing.F) {
	for _, s := range []string{"198.18.1.0/24", "198.18.0.0/23", "198.18.0.128/25", "198.19.0.0/24", "fd00::/64", "::ffff:198.18.2.0/120", "x", ""} {
		f.Add(s, 22, 24)
	}
	f.Fuzz(func(t *testing.T, podCIDR string, clusterBits, mask int) {
		r, err := NewRange(fmt.Sprintf("198.18.0.0/%d", clusterBits), mask)
		if err != nil {
			return
		}
		plan := r.Allocate([]Node{{Name: "a"}, {Name: "u", PodCIDR: podCIDR}, {Name: "b"}})
		seen := map[netip.Prefix]bool{}
		for _, p := range plan.Assign {
			if seen[p] || !r.cidr.Contains(p.Addr()) || p.Bits() != mask {
				t.Fatalf("%q: assigned %v", podCIDR, plan.Assign)
			}
			seen[p] = true
		}
	})
}
