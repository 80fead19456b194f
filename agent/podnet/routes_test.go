package podnet

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

func node(name, podCIDR string, ips ...string) *api.Node {
	n := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: api.NodeSpec{PodCIDR: podCIDR}}
	n.Status.Addresses = append(n.Status.Addresses, api.NodeAddress{Type: api.NodeHostName, Address: name})
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, api.NodeAddress{Type: api.NodeInternalIP, Address: ip})
	}
	return n
}

func TestWantRoutes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nodes   []*api.Node
		routes  []string
		skipped []string // node: reason
	}{
		{
			name:   "every other node, not self",
			nodes:  []*api.Node{node("a", "198.19.0.0/24", "198.18.0.1"), node("c", "198.19.2.0/24", "198.18.0.3"), node("b", "198.19.1.0/24", "198.18.0.2")},
			routes: []string{"198.19.1.0/24 via 198.18.0.2 (node b)", "198.19.2.0/24 via 198.18.0.3 (node c)"},
		},
		{
			name:   "host bits are masked, the first InternalIP is taken",
			nodes:  []*api.Node{node("a", "198.19.0.0/24", "198.18.0.1"), node("b", "198.19.1.7/24", "198.18.0.2", "198.18.0.9")},
			routes: []string{"198.19.1.0/24 via 198.18.0.2 (node b)"},
		},
		{
			name:    "nodes without what a route needs",
			nodes:   []*api.Node{node("a", "198.19.0.0/24", "198.18.0.1"), node("b", "", "198.18.0.2"), node("c", "198.19.2.0/24"), node("d", "198.19.3", "198.18.0.4"), node("e", "fd00::/64", "198.18.0.5")},
			skipped: []string{"b: no spec.podCIDR", "c: no InternalIP address in status.addresses", "d: spec.podCIDR \"198.19.3\" is not a CIDR", "e: InternalIP 198.18.0.5 is not of spec.podCIDR fd00::/64's family"},
		},
		{
			name:    "overlaps: self's range and an earlier node's win",
			nodes:   []*api.Node{node("z", "198.19.0.0/24", "198.18.0.1"), node("a", "198.19.0.0/25", "198.18.0.2"), node("b", "198.19.1.0/24", "198.18.0.3"), node("c", "198.19.1.0/24", "198.18.0.4")},
			routes:  []string{"198.19.1.0/24 via 198.18.0.3 (node b)"},
			skipped: []string{"a: spec.podCIDR 198.19.0.0/25 overlaps node z's", "c: spec.podCIDR 198.19.1.0/24 overlaps node b's"},
		},
		{
			name:   "a node alone routes nothing",
			nodes:  []*api.Node{node("a", "198.19.0.0/24", "198.18.0.1")},
			routes: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			self := tc.nodes[0].Name // the first node listed
			routes, skipped := WantRoutes(self, tc.nodes)
			var got, gotSkipped []string
			for _, r := range routes {
				got = append(got, r.String())
			}
			for _, s := range skipped {
				gotSkipped = append(gotSkipped, s.Node+": "+s.Reason)
			}
			if !slices.Equal(got, tc.routes) {
				t.Errorf("routes %q, want %q", got, tc.routes)
			}
			if !slices.Equal(gotSkipped, tc.skipped) {
				t.Errorf("skipped %q, want %q", gotSkipped, tc.skipped)
			}
		})
	}
}

func TestGateway(t *testing.T) {
	for cidr, want := range map[string]string{
		"198.19.1.0/24": "198.19.1.1", "198.19.1.9/24": "198.19.1.1", "198.18.0.0/15": "198.18.0.1", "fd00:1::/64": "fd00:1::1",
		"198.19.1.0/31": `error: pod CIDR "198.19.1.0/31": too small for pods`,
		"nonsense":      `error: pod CIDR "nonsense": netip.ParsePrefix("nonsense"): no '/'`,
	} {
		got, err := Gateway(cidr)
		if msg, ok := strings.CutPrefix(want, "error: "); ok {
			if err == nil || err.Error() != msg {
				t.Errorf("Gateway(%s) = %s, %v; want the error %s", cidr, got, err, msg)
			}
			continue
		}
		if err != nil || got != netip.MustParseAddr(want) {
			t.Errorf("Gateway(%s) = %s, %v; want %s", cidr, got, err, want)
		}
	}
}
