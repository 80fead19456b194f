package main

import "testing"

func TestEmbeddedClusterDNS(t *testing.T) {
	for listen, want := range map[string]string{
		":10053":           "127.0.0.1:10053",
		"0.0.0.0:53":       "127.0.0.1:53",
		"[::]:5353":        "127.0.0.1:5353",
		"198.18.0.1:10053": "198.18.0.1:10053",
		"10053":            "",
	} {
		if got := embeddedClusterDNS(listen); got != want {
			t.Errorf("embeddedClusterDNS(%q) = %q, want %q", listen, got, want)
		}
	}
}
