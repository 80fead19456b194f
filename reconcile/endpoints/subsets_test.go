package endpoints

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/members/memberstest"
)

// TestSubsetsAreCanonical: the order pods come in changes nothing, so the
// controller never rewrites an Endpoints for a reordering.
func TestSubsetsAreCanonical(t *testing.T) {
	svc := memberstest.Service("web", map[string]string{"app": "web"}, memberstest.HTTPPort(), memberstest.MetricsPort(),
		api.ServicePort{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(5353), Protocol: api.ProtocolUDP})
	var pods []*api.Pod
	for i := range 40 {
		var opts []memberstest.PodOpt
		if i%3 == 0 {
			opts = append(opts, memberstest.NotReady)
		}
		if i%4 == 0 {
			opts = append(opts, memberstest.NoPorts)
		}
		pods = append(pods, memberstest.Pod(fmt.Sprintf("p%02d", i), fmt.Sprintf("10.0.0.%d", i%7), opts...))
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
