package members

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/members/memberstest"
)

func TestResolvePort(t *testing.T) {
	p := memberstest.Pod("a", "10.0.0.1", func(p *api.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, api.ContainerPort{Name: "dns", ContainerPort: 5353, Protocol: api.ProtocolUDP})
	})
	tests := []struct {
		name string
		sp   api.ServicePort
		want int32
		ok   bool
	}{
		{"by name", api.ServicePort{Port: 80, TargetPort: intstr.FromString("http")}, 8080, true},
		{"by name and protocol", api.ServicePort{Port: 53, TargetPort: intstr.FromString("dns"), Protocol: api.ProtocolUDP}, 5353, true},
		{"name with another protocol", api.ServicePort{Port: 53, TargetPort: intstr.FromString("dns"), Protocol: api.ProtocolTCP}, 0, false},
		{"missing name", api.ServicePort{Port: 80, TargetPort: intstr.FromString("grpc")}, 0, false},
		{"by number", api.ServicePort{Port: 80, TargetPort: intstr.FromInt32(9000)}, 9000, true},
		{"unset: the service port", api.ServicePort{Port: 80}, 80, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := resolvePort(p, &tt.sp)
			if got != tt.want || ok != tt.ok {
				t.Errorf("resolvePort = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
