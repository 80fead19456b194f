package controlplane

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestCheckClusterCIDR(t *testing.T) {
	for _, tc := range []struct {
		cidr    string
		mask    int
		wantErr string
	}{
		{"", 0, ""},
		{DefaultClusterCIDR, 0, ""},
		{"198.18.0.0/15", 24, ""},
		{"198.18.0.0", 24, "--cluster-cidr"},
		{"198.18.0.0/16", 12, "shorter than the cluster CIDR"},
		{"10.0.0.0/8", 28, "more than 2^16"},
	} {
		err := Config{ClusterCIDR: tc.cidr, NodeCIDRMaskSize: tc.mask}.Check()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("--cluster-cidr %q --node-cidr-mask-size %d: %v, want %q", tc.cidr, tc.mask, err, tc.wantErr)
		}
		c, err := initNodeIPAM(context.Background(), Deps{Config: Config{ClusterCIDR: tc.cidr, NodeCIDRMaskSize: tc.mask}})
		if err != nil || (c != nil) != (tc.cidr != "" && tc.wantErr == "") {
			t.Errorf("--cluster-cidr %q --node-cidr-mask-size %d: controller %v, %v", tc.cidr, tc.mask, c != nil, err)
		}
	}
}

// TestRecursionNetworks: the cluster DNS forwards for loopback and the
// pods of the cluster CIDR by default, not for the world.
func TestRecursionNetworks(t *testing.T) {
	nets := recursionNetworks(DefaultClusterCIDR)
	has := func(addr string) bool {
		a := netip.MustParseAddr(addr)
		return slices.ContainsFunc(nets, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	for addr, want := range map[string]bool{"127.0.0.1": true, "::1": true, "10.42.7.9": true, "10.43.0.1": false, "203.0.113.9": false} {
		if has(addr) != want {
			t.Errorf("%s forwarded for: %v, want %v (%v)", addr, !want, want, nets)
		}
	}
	if nets := recursionNetworks(""); slices.Contains(nets, netip.MustParsePrefix(DefaultClusterCIDR)) {
		t.Errorf("no cluster CIDR, yet %v", nets)
	}
}
