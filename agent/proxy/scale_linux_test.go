package proxy

import (
	"fmt"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// TestWholeTableAtScale writes the table of 1,000 Services of 10
// endpoints whole, and replaces it whole as a restarted agent does: the
// service-ips map's thousand elements once overflowed a netlink
// attribute's 16-bit length, which the kernel answered with ENOENT.
func TestWholeTableAtScale(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces and nftables")
	}
	ns := newNetNS(t, testtool.Need(t, "ip"), "scale")
	var in Input
	for i := range 1000 {
		vip := fmt.Sprintf("198.19.%d.%d", i/250, i%250+1)
		svc := &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("s%d", i)},
			Spec: api.ServiceSpec{ClusterIP: vip, ClusterIPs: []string{vip}, Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		api.Default(svc)
		in.Services = append(in.Services, svc)
		in.Slices = append(in.Slices, sliceOf(i, 10, func(int) bool { return true }))
	}
	rs := Build(in)
	for i := range 3 {
		s := NewSyncer(int(ns.h))
		if full, err := s.Sync(rs); err != nil || !full {
			t.Errorf("round %d: written whole %v, %v", i, full, err)
		}
	}
}
