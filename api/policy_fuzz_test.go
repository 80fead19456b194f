package api

import (
	"strings"
	"testing"
)

// FuzzDecodeEviction feeds the Eviction decoder arbitrary bodies: it must
// never panic, must answer on one line, and what it accepts is an
// Eviction of policy/v1 or policy/v1beta1. The seed corpus is
// testdata/fuzz/FuzzDecodeEviction.
func FuzzDecodeEviction(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0","namespace":"default"},"deleteOptions":{"gracePeriodSeconds":0}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeEviction(data)
		if err != nil {
			if e != nil {
				t.Fatalf("%q: an Eviction with the error %v", data, err)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("%q: error on several lines: %q", data, err)
			}
			return
		}
		gvk := e.GroupVersionKind()
		if gvk.Kind != "Eviction" || (gvk.GroupVersion() != PolicyV1 && gvk.GroupVersion() != PolicyV1Beta1) {
			t.Fatalf("%q: accepted as %v", data, gvk)
		}
	})
}
