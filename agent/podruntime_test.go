package agent

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/agent/runtime"
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

func TestPodDNS(t *testing.T) {
	pod := func(policy string) *api.Pod {
		return &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}, Spec: api.PodSpec{DNSPolicy: api.DNSPolicy(policy)}}
	}
	cluster := &runtime.DNS{
		Servers:  []string{"198.18.7.1"},
		Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local"},
		Options:  []string{"ndots:5"},
	}
	for _, tt := range []struct {
		policy, server string
		want           *runtime.DNS
	}{
		{"", "198.18.7.1", cluster},
		{"ClusterFirst", "198.18.7.1", cluster},
		{"ClusterFirstWithHostNet", "198.18.7.1", cluster},
		{"Default", "198.18.7.1", nil},
		{"None", "198.18.7.1", nil},
		{"ClusterFirst", "", nil},
	} {
		if got := podDNS(pod(tt.policy), tt.server); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q with server %q: %+v, want %+v", tt.policy, tt.server, got, tt.want)
		}
	}
}
