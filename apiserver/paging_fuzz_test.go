package apiserver

import (
	"encoding/base64"
	"strings"
	"testing"
)

// FuzzDecodeContinue: whatever a client sends as continue, the decoder
// answers a token or an error, never panics, and what it accepts is a
// token the server could have made, for the list it was sent to.
func FuzzDecodeContinue(f *testing.F) {
	f.Add(encodeContinue(42, "default/a\x00"), "default/")
	f.Add(encodeContinue(-1, "b\x00"), "")
	f.Add("garbage!!", "")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":1e30,"start":"x"}`)), "")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":-2,"start":"x"}`)), "")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":3,"start":"kube-system/x"}`)), "default/")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`[]`)), "")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, token, prefix string) {
		rev, start, err := decodeContinue(token, prefix)
		if err != nil {
			if !strings.HasPrefix(err.Error(), errInvalidContinue.Error()) {
				t.Fatalf("error %q does not say the key is invalid", err)
			}
			return
		}
		if rev == 0 || rev < -1 || start == "" || !strings.HasPrefix(start, prefix) {
			t.Fatalf("accepted %q as revision %d, start %q", token, rev, start)
		}
		rev2, start2, err := decodeContinue(encodeContinue(rev, start), prefix)
		if err != nil || rev2 != rev || start2 != start {
			t.Fatalf("re-encoded token: %d %q %v, want %d %q", rev2, start2, err, rev, start)
		}
	})
}
