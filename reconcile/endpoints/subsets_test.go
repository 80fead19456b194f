package endpoints

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/endpoints/endpointstest"
)

// TestSubsetsAreCanonical: the order pods come in changes nothing, so the
// controller never rewrites an Endpoints for a reordering.
func TestSubsetsAreCanonical(t *testing.T) {
	svc := endpointstest.Service("web", map[string]string{"app": "web"}, endpointstest.HTTPPort(), endpointstest.MetricsPort(),
		api.ServicePort{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(5353), Protocol: api.ProtocolUDP})
	var pods []*api.Pod
	for i := range 40 {
		var opts []endpointstest.PodOpt
		if i%3 == 0 {
			opts = append(opts, endpointstest.NotReady)
		}
		if i%4 == 0 {
			opts = append(opts, endpointstest.NoPorts)
		}
		pods = append(pods, endpointstest.Pod(fmt.Sprintf("p%02d", i), fmt.Sprintf("10.0.0.%d", i%7), opts...))
	}
	want := Subsets(svc, pods)
	if len(want) != 2 {
		t.Fatalf("%d subsets, want 2 (with and without the http port)", len(want))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		rng.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
		if got := Subsets(svc, pods); !equality.Semantic.DeepEqual(got, want) {
			t.Fatalf("another order, other subsets:\n got %s\nwant %s", dump(got), dump(want))
		}
	}
}

func TestResolvePort(t *testing.T) {
	p := endpointstest.Pod("a", "10.0.0.1", func(p *api.Pod) {
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
