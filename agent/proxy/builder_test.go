package proxy

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

// scaleInput is n Services of m endpoints each, some of them NodePorts
// with traffic policy Local, each endpoint in a slice of its Service's
// (two slices a Service).
func scaleInput(n, m int) Input {
	in := Input{NodeName: "node-1"}
	for i := range n {
		vip := fmt.Sprintf("198.19.%d.%d", i/250, i%250+1)
		svc := &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("s%d", i)},
			Spec: api.ServiceSpec{ClusterIP: vip, ClusterIPs: []string{vip},
				Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		if i%5 == 0 {
			svc.Spec.Type = api.ServiceTypeNodePort
			svc.Spec.Ports[0].NodePort = int32(30000 + i)
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}
		api.Default(svc)
		in.Services = append(in.Services, svc)
		for k := range 2 {
			name, port, proto := "http", int32(8080), api.ProtocolTCP
			es := &api.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("s%d-%d", i, k),
				Labels: map[string]string{api.LabelServiceName: svc.Name}},
				AddressType: api.AddressTypeIPv4, Ports: []api.EndpointSlicePort{{Name: &name, Port: &port, Protocol: &proto}}}
			for j := range m {
				ready, node := j%3 != 0, fmt.Sprintf("node-%d", j%2+1)
				es.Endpoints = append(es.Endpoints, api.Endpoint{
					Addresses: []string{fmt.Sprintf("198.18.%d.%d", 100+(i*2+k)/25, ((i*2+k)%25)*10+j+1)},
					NodeName:  &node, Conditions: api.EndpointConditions{Ready: &ready, Serving: &ready}})
			}
			in.Slices = append(in.Slices, es)
		}
	}
	return in
}

// TestBuilderIsBuild: through Services and EndpointSlices changed,
// added and deleted, a Builder's Ruleset is Build's, and it makes again
// only the rules of the Services whose objects changed.
func TestBuilderIsBuild(t *testing.T) {
	t.Parallel()
	in := scaleInput(40, 4)
	rng := rand.New(rand.NewPCG(1, 2))
	var b Builder
	check := func(step string, rebuilt ...string) {
		t.Helper()
		before := map[string]*builtService{}
		for k, v := range b.last {
			before[k] = v
		}
		got := b.Build(in)
		if want := Build(in); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the Builder's rules differ from Build's", step)
		}
		if before == nil || len(before) == 0 {
			return
		}
		var made []string
		for k, v := range b.last {
			if before[k] != v {
				made = append(made, k)
			}
		}
		if len(made) != len(rebuilt) || (len(made) == 1 && made[0] != rebuilt[0]) {
			t.Errorf("%s: made again %v, want %v", step, made, rebuilt)
		}
	}
	check("first")
	check("unchanged")
	for step := range 60 {
		i := rng.IntN(len(in.Services))
		key := "default/" + in.Services[i].Name
		switch step % 5 {
		case 0: // an endpoint turns unready or ready: a new slice object
			for k, es := range in.Slices {
				if es.Labels[api.LabelServiceName] == in.Services[i].Name {
					es = es.DeepCopy()
					r := !*es.Endpoints[0].Conditions.Ready
					es.Endpoints[0].Conditions.Ready = &r
					in.Slices[k] = es
					break
				}
			}
			check(fmt.Sprintf("step %d: slice of %s", step, key), key)
		case 1: // the Service changes
			svc := in.Services[i].DeepCopy()
			svc.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			in.Services[i] = svc
			check(fmt.Sprintf("step %d: service %s", step, key), key)
		case 2: // the Service goes, its slices stay
			in.Services = append(in.Services[:i:i], in.Services[i+1:]...)
			check(fmt.Sprintf("step %d: %s deleted", step, key))
		case 3: // a new Service with slices
			n := 1000 + step
			more := scaleInput(n+1, 3)
			svc := more.Services[n]
			in.Services = append(in.Services, svc)
			in.Slices = append(in.Slices, more.Slices[2*n:]...)
			check(fmt.Sprintf("step %d: %s added", step, svc.Name), "default/"+svc.Name)
		case 4: // the lists come in another order
			rng.Shuffle(len(in.Services), func(a, b int) { in.Services[a], in.Services[b] = in.Services[b], in.Services[a] })
			rng.Shuffle(len(in.Slices), func(a, b int) { in.Slices[a], in.Slices[b] = in.Slices[b], in.Slices[a] })
			check(fmt.Sprintf("step %d: shuffled", step))
		}
	}
	// Another node: everything is made again.
	in.NodeName = "node-2"
	if got, want := b.Build(in), Build(in); !reflect.DeepEqual(got, want) {
		t.Fatal("another node: the Builder's rules differ from Build's")
	}
}

// BenchmarkBuild1000x10: the rules of 1,000 Services of 10 endpoints,
// made whole (Build) and by a Builder after one endpoint changed, as a
// sync after an endpoint turned ready makes them.
//
//	go test -run XXX -bench Build1000x10 ./agent/proxy/
func BenchmarkBuild1000x10(b *testing.B) {
	in := scaleInput(1000, 10)
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			Build(in)
		}
	})
	b.Run("one-service-changed", func(b *testing.B) {
		var bl Builder
		bl.Build(in)
		i := 0
		for b.Loop() {
			k := 2 * (i % 1000)
			es := in.Slices[k].DeepCopy()
			r := !*es.Endpoints[0].Conditions.Ready
			es.Endpoints[0].Conditions.Ready = &r
			in.Slices[k] = es
			bl.Build(in)
			i++
		}
	})
}
