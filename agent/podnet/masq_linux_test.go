package podnet

import (
	"net/netip"
	"slices"
	"testing"
)

func TestMergePrefixes(t *testing.T) {
	in := []netip.Prefix{
		netip.MustParsePrefix("198.19.2.0/24"), netip.MustParsePrefix("198.19.0.0/23"),
		netip.MustParsePrefix("198.19.1.0/24"), netip.MustParsePrefix("fd00::/64"), netip.MustParsePrefix("198.19.2.7/24"),
	}
	got := mergePrefixes(in, true)
	want := []netip.Prefix{netip.MustParsePrefix("198.19.0.0/23"), netip.MustParsePrefix("198.19.2.0/24")}
	if !slices.Equal(got, want) {
		t.Errorf("mergePrefixes = %v, want %v", got, want)
	}
	for p, want := range map[string]string{"198.19.0.0/23": "198.19.2.0", "198.19.255.0/24": "198.20.0.0", "fd00::/64": "fd00:0:0:1::", "255.255.255.0/24": ""} {
		end, ok := pastEnd(netip.MustParsePrefix(p))
		if want == "" {
			if ok {
				t.Errorf("pastEnd(%s) = %s, want none", p, end)
			}
			continue
		}
		if !ok || end.String() != want {
			t.Errorf("pastEnd(%s) = %s, %v; want %s", p, end, ok, want)
		}
	}
}
