package pods

import (
	"testing"

	"github.com/berth-dev/berth/api"
)

// Kubernetes defaults imagePullPolicy from the tag: Always for :latest or
// none, IfNotPresent for any other tag or a digest.
func TestPullPolicy(t *testing.T) {
	for _, tt := range []struct{ image, policy, want string }{
		{"busybox", "", pullAlways},
		{"busybox:latest", "", pullAlways},
		{"busybox:1.36", "", pullIfNotPresent},
		{"127.0.0.1:5000/busybox", "", pullAlways},
		{"127.0.0.1:5000/busybox:1", "", pullIfNotPresent},
		{"busybox@sha256:abcd", "", pullIfNotPresent},
		{"busybox:1.36", pullNever, pullNever},
		{"busybox", pullIfNotPresent, pullIfNotPresent},
	} {
		if got := pullPolicy(&api.Container{Image: tt.image, ImagePullPolicy: api.PullPolicy(tt.policy)}); got != tt.want {
			t.Errorf("%s (%q): %s, want %s", tt.image, tt.policy, got, tt.want)
		}
	}
}
