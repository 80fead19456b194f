package main

import (
	"fmt"
	"testing"
)

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

func TestParsePrefixes(t *testing.T) {
	got, err := parsePrefixes([]string{"10.42.0.0/16", " 198.18.0.7 ", "2001:db8::1/64", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[10.42.0.0/16 198.18.0.7/32 2001:db8::/64 ::1/128]"; fmt.Sprint(got) != want {
		t.Errorf("got %v, want %s", got, want)
	}
	if got, err := parsePrefixes(nil); got != nil || err != nil {
		t.Errorf("none: %v %v, want nil", got, err)
	}
	if _, err := parsePrefixes([]string{"10.42.0.0/33"}); err == nil {
		t.Error("a bad CIDR was accepted")
	}
}
