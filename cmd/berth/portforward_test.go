package main

import "testing"

func TestCheckPortSpec(t *testing.T) {
	for _, ok := range []string{"8080", "8080:80", ":80", "0:80", "65535:1"} {
		if err := checkPortSpec(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "0", "http", "80:http", "x:80", "80:", "65536", "1:65536", "-1:80", "80:80:80"} {
		if err := checkPortSpec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
