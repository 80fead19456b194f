package servicealloc

import "testing"

// FuzzParse: the flag parsers never panic, and what they accept reads
// back the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"10.43.0.0/16", "10.43.0.0/16,fd00::/112", "30000-32767", "1-1", "::/0", "0.0.0.0/0,::/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if cs, err := ParseCIDRs(s); err == nil {
			for _, c := range cs {
				if !c.contains(c.First()) || c.contains(c.prefix.Addr()) {
					t.Errorf("%s: first %s not in it, or the network address is", c, c.First())
				}
			}
		}
		if r, err := ParsePortRange(s); err == nil {
			again, err := ParsePortRange(r.String())
			if err != nil || again != r || r.Size <= 0 {
				t.Errorf("%q: %v reads back as %v, %v", s, r, again, err)
			}
		}
	})
}
