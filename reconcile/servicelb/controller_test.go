package servicelb

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

func node(name string, isReady bool, addrs ...api.NodeAddress) *api.Node {
	st := api.ConditionFalse
	if isReady {
		st = api.ConditionTrue
	}
	return &api.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: api.NodeStatus{Addresses: addrs, Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: st}}}}
}

func internal(ip string) api.NodeAddress {
	return api.NodeAddress{Type: api.NodeInternalIP, Address: ip}
}
func external(ip string) api.NodeAddress {
	return api.NodeAddress{Type: api.NodeExternalIP, Address: ip}
}

func ips(ing []corev1.LoadBalancerIngress) []string {
	var out []string
	for _, i := range ing {
		out = append(out, i.IP)
	}
	return out
}

func TestIngress(t *testing.T) {
	got := ips(Ingress([]*api.Node{
		node("b", true, internal("198.18.0.2")),
		node("a", true, internal("198.18.0.1"), external("198.18.9.1")),
		node("down", false, internal("198.18.0.3")),
		node("none", true),
	}))
	if want := []string{"198.18.0.2", "198.18.9.1"}; !slices.Equal(got, want) {
		t.Errorf("Ingress = %v, want %v", got, want)
	}
}

func TestReconcile(t *testing.T) {
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	svc := func(name string, typ api.ServiceType) *api.Service {
		o := &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: api.ServiceSpec{Type: typ, Ports: []api.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}}}}
		api.Default(o)
		return o
	}
	other := svc("other", api.ServiceTypeLoadBalancer)
	class := "example.com/lb"
	other.Spec.LoadBalancerClass = &class
	for _, o := range []api.Object{node("n1", true, internal("198.18.0.1")), node("n2", true, internal("198.18.0.2")),
		svc("lb", api.ServiceTypeLoadBalancer), svc("plain", api.ServiceTypeClusterIP), other} {
		if _, err := s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	l := &lb{store: s}
	get := func(name string) []string {
		o, err := s.Get(serviceKind, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		return ips(o.(*api.Service).Status.LoadBalancer.Ingress)
	}
	if _, err := l.Reconcile(ctx, passKey); err != nil {
		t.Fatal(err)
	}
	if got := get("lb"); !slices.Equal(got, []string{"198.18.0.1", "198.18.0.2"}) {
		t.Fatalf("lb: %v", got)
	}
	if got := get("plain"); got != nil {
		t.Fatalf("a ClusterIP service: %v", got)
	}
	if got := get("other"); got != nil {
		t.Fatalf("another class's: %v", got)
	}
	// A node that is not ready is left out; a pass that changes nothing
	// writes nothing.
	if _, err := s.Update(ctx, node("n2", false, internal("198.18.0.2"))); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reconcile(ctx, passKey); err != nil {
		t.Fatal(err)
	}
	if got := get("lb"); !slices.Equal(got, []string{"198.18.0.1"}) {
		t.Fatalf("lb after n2 went down: %v", got)
	}
	rev := s.Revision()
	if _, err := l.Reconcile(ctx, passKey); err != nil || s.Revision() != rev {
		t.Fatalf("an idle pass wrote: %v, revision %d → %d", err, rev, s.Revision())
	}
	// Type ClusterIP: the addresses go.
	o, _ := s.Get(serviceKind, "default", "lb")
	next := o.(*api.Service).DeepCopy()
	next.Spec.Type = api.ServiceTypeClusterIP
	next.Spec.AllocateLoadBalancerNodePorts = nil
	if _, err := s.Update(ctx, next); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reconcile(ctx, passKey); err != nil {
		t.Fatal(err)
	}
	if got := get("lb"); got != nil {
		t.Fatalf("after the type changed: %v", got)
	}
}
