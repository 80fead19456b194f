package ingress

import (
	"context"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/store"
)

func newStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.New(store.Memory{}, store.Options{Admit: []store.AdmitFunc{Admit}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func web(host, svc, secret string) *api.Ingress {
	prefix := networkingv1.PathTypePrefix
	ing := &api.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: host}, Spec: networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	if secret != "" {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: secret}}
	}
	return ing
}

// TestAdmitDefaultClass: an Ingress without a class gets the default
// one, once there is one; one naming a class keeps it.
func TestAdmitDefaultClass(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, web("before.test", "web", "")); err != nil {
		t.Fatal(err)
	}
	if err := Bootstrap(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := Bootstrap(ctx, s); err != nil {
		t.Fatalf("bootstrap again: %v", err)
	}
	if _, err := s.Create(ctx, web("after.test", "web", "")); err != nil {
		t.Fatal(err)
	}
	other := web("other.test", "web", "")
	nginx := "nginx"
	other.Spec.IngressClassName = &nginx
	if _, err := s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"before.test": "", "after.test": api.IngressClassBerth, "other.test": "nginx"} {
		o, err := s.Get(ingressKind, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if c := o.(*api.Ingress).Spec.IngressClassName; c != nil {
			got = *c
		}
		if got != want {
			t.Errorf("%s: class %q, want %q", name, got, want)
		}
	}
}

// TestReconcile fills in the status of the class's Ingresses and records
// one Warning event per missing Service or Secret.
func TestReconcile(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := Bootstrap(ctx, s); err != nil {
		t.Fatal(err)
	}
	svc := &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: api.ServiceSpec{ClusterIP: api.ClusterIPNone, Ports: []api.ServicePort{{Port: 80}}}}
	api.Default(svc)
	for _, o := range []api.Object{svc, web("ok.test", "web", ""), web("broken.test", "missing", "no-tls")} {
		if _, err := s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	w := event.NewWriter(s, event.Options{})
	c := &controller{store: s, opts: Options{Addresses: func() []string { return []string{"198.18.0.1"} }, Events: w.Recorder(EventComponent, "")},
		reported: map[string][]string{}}
	for range 2 {
		if _, err := c.Reconcile(ctx, passKey); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"ok.test", "broken.test"} {
		o, _ := s.Get(ingressKind, "default", name)
		if st := o.(*api.Ingress).Status.LoadBalancer.Ingress; len(st) != 1 || st[0].IP != "198.18.0.1" {
			t.Errorf("%s: status %+v", name, st)
		}
	}
	rev := s.Revision()
	if _, err := c.Reconcile(ctx, passKey); err != nil || s.Revision() != rev {
		t.Errorf("an idle pass wrote: %v", err)
	}
	evCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.Run(evCtx); close(done) }()
	var reasons []string
	deadline := 0
	for len(reasons) < 2 && deadline < 3000 {
		objs, _, err := s.List(api.MustLookupResource("events"), store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		reasons = reasons[:0]
		for _, o := range objs {
			ev := o.(*api.Event)
			if ev.InvolvedObject.Name != "broken.test" || ev.Type != api.EventTypeWarning {
				t.Errorf("event %+v", ev)
			}
			reasons = append(reasons, ev.Reason)
			if ev.Count > 1 {
				t.Errorf("event %s recorded %d times", ev.Reason, ev.Count)
			}
		}
		deadline++
		if len(reasons) < 2 {
			waitABit()
		}
	}
	cancel()
	<-done
	slices.Sort(reasons)
	if !slices.Equal(reasons, []string{"SecretNotFound", "ServiceNotFound"}) {
		t.Errorf("events %v", reasons)
	}
}
