package endpoints

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/members"
	"github.com/berth-dev/berth/reconcile/members/memberstest"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
	"github.com/berth-dev/berth/testtool"
)

func inNamespace(ns string) memberstest.PodOpt { return func(p *api.Pod) { p.Namespace = ns } }
func phase(ph api.PodPhase) memberstest.PodOpt { return func(p *api.Pod) { p.Status.Phase = ph } }
func hostname(h string) memberstest.PodOpt     { return func(p *api.Pod) { p.Spec.Hostname = h } }
func terminating(p *api.Pod) {
	// A finalizer keeps the pod in the store once deleted.
	p.Finalizers = []string{"test/hold"}
}

func addr(name, ip string) api.EndpointAddress {
	node := "node-1"
	return api.EndpointAddress{
		IP: ip, Hostname: name, NodeName: &node,
		TargetRef: &api.ObjectReference{Kind: "Pod", Namespace: "default", Name: name, UID: "uid-" + name},
	}
}

// longName is a pod name that is a DNS subdomain but, at 70 characters,
// no DNS label.
var longName = strings.Repeat("a", 70)

func withHostname(a api.EndpointAddress, h string) api.EndpointAddress {
	a.Hostname = h
	return a
}

var (
	epHTTP    = api.EndpointPort{Name: "http", Port: 8080, Protocol: api.ProtocolTCP}
	epMetrics = api.EndpointPort{Name: "metrics", Port: 9100, Protocol: api.ProtocolTCP}
)

func managed(name string, subsets ...api.EndpointSubset) *api.Endpoints {
	return &api.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{LabelManagedBy: ManagedBy}},
		Subsets:    subsets,
	}
}

func TestReconcile(t *testing.T) {
	web := map[string]string{"app": "web"}
	tests := []struct {
		name      string
		objects   []api.Object
		terminate []string // pods to delete (held by a finalizer) before reconciling
		key       string
		want      []api.EndpointSubset
		absent    bool // no Endpoints afterwards
	}{
		{
			name: "ready and not-ready pods",
			objects: []api.Object{
				memberstest.Service("web", web, memberstest.HTTPPort()),
				memberstest.Pod("a", "10.0.0.1"),
				memberstest.Pod("b", "10.0.0.2", memberstest.NotReady),
			},
			key: "default/web",
			want: []api.EndpointSubset{{
				Addresses:         []api.EndpointAddress{addr("a", "10.0.0.1")},
				NotReadyAddresses: []api.EndpointAddress{addr("b", "10.0.0.2")},
				Ports:             []api.EndpointPort{epHTTP},
			}},
		},
		{
			name: "a pod without the named port is left out of that port's subset",
			objects: []api.Object{
				memberstest.Service("web", web, memberstest.HTTPPort(), memberstest.MetricsPort()),
				memberstest.Pod("a", "10.0.0.1"),
				memberstest.Pod("b", "10.0.0.2", memberstest.NoPorts),
			},
			key: "default/web",
			want: []api.EndpointSubset{
				{Addresses: []api.EndpointAddress{addr("a", "10.0.0.1")}, Ports: []api.EndpointPort{epHTTP, epMetrics}},
				{Addresses: []api.EndpointAddress{addr("b", "10.0.0.2")}, Ports: []api.EndpointPort{epMetrics}},
			},
		},
		{
			name: "pods without an IP, finished, elsewhere or not selected are left out",
			objects: []api.Object{
				memberstest.Service("web", web, memberstest.HTTPPort()),
				memberstest.Pod("a", "10.0.0.1"),
				memberstest.Pod("no-ip", ""),
				memberstest.Pod("done", "10.0.0.3", phase(api.PodSucceeded)),
				memberstest.Pod("failed", "10.0.0.4", phase(api.PodFailed)),
				memberstest.Pod("other-ns", "10.0.0.5", inNamespace("other")),
				memberstest.Pod("other-app", "10.0.0.6", memberstest.Labelled("app", "db")),
			},
			key:  "default/web",
			want: []api.EndpointSubset{{Addresses: []api.EndpointAddress{addr("a", "10.0.0.1")}, Ports: []api.EndpointPort{epHTTP}}},
		},
		{
			name: "a pod being deleted is left out",
			objects: []api.Object{
				memberstest.Service("web", web, memberstest.HTTPPort()),
				memberstest.Pod("a", "10.0.0.1"),
				memberstest.Pod("going", "10.0.0.2", terminating),
			},
			terminate: []string{"going"},
			key:       "default/web",
			want:      []api.EndpointSubset{{Addresses: []api.EndpointAddress{addr("a", "10.0.0.1")}, Ports: []api.EndpointPort{epHTTP}}},
		},
		{
			name: "publishNotReadyAddresses lists not-ready and terminating pods as ready",
			objects: []api.Object{
				func() *api.Service {
					s := memberstest.Service("web", web, memberstest.HTTPPort())
					s.Spec.PublishNotReadyAddresses = true
					return s
				}(),
				memberstest.Pod("a", "10.0.0.1", memberstest.NotReady),
				memberstest.Pod("going", "10.0.0.2", terminating),
			},
			terminate: []string{"going"},
			key:       "default/web",
			want: []api.EndpointSubset{{
				Addresses: []api.EndpointAddress{addr("a", "10.0.0.1"), addr("going", "10.0.0.2")},
				Ports:     []api.EndpointPort{epHTTP},
			}},
		},
		{
			name: "pods sharing the node's IP are distinct endpoints; spec.hostname names one",
			objects: []api.Object{
				memberstest.Service("web", web, api.ServicePort{Name: "http", Port: 80}),
				memberstest.Pod("b", "10.0.0.1"),
				memberstest.Pod("a", "10.0.0.1", hostname("first")),
			},
			key: "default/web",
			want: []api.EndpointSubset{{
				Addresses: []api.EndpointAddress{withHostname(addr("a", "10.0.0.1"), "first"), addr("b", "10.0.0.1")},
				Ports:     []api.EndpointPort{{Name: "http", Port: 80, Protocol: api.ProtocolTCP}},
			}},
		},
		{
			name: "a pod whose name is no DNS label gets no hostname",
			objects: []api.Object{
				memberstest.Service("web", web, memberstest.HTTPPort()),
				memberstest.Pod("web.v1", "10.0.0.1"),
				memberstest.Pod(longName, "10.0.0.2"),
				memberstest.Pod(longName+".x", "10.0.0.3", hostname("named")),
			},
			key: "default/web",
			want: []api.EndpointSubset{{
				Addresses: []api.EndpointAddress{
					withHostname(addr("web.v1", "10.0.0.1"), ""),
					withHostname(addr(longName, "10.0.0.2"), ""),
					withHostname(addr(longName+".x", "10.0.0.3"), "named"),
				},
				Ports: []api.EndpointPort{epHTTP},
			}},
		},
		{
			name: "a headless service without ports lists addresses",
			objects: []api.Object{
				func() *api.Service {
					s := memberstest.Service("web", web)
					s.Spec.ClusterIP = api.ClusterIPNone
					return s
				}(),
				memberstest.Pod("a", "10.0.0.1"),
			},
			key:  "default/web",
			want: []api.EndpointSubset{{Addresses: []api.EndpointAddress{addr("a", "10.0.0.1")}}},
		},
		{
			name:    "no pods: an Endpoints without subsets",
			objects: []api.Object{memberstest.Service("web", web, memberstest.HTTPPort())},
			key:     "default/web",
			want:    nil,
		},
		{
			name:    "a service without a selector gets none",
			objects: []api.Object{memberstest.Service("web", nil, memberstest.HTTPPort()), memberstest.Pod("a", "10.0.0.1")},
			key:     "default/web",
			absent:  true,
		},
		{
			name: "a managed Endpoints goes when its service loses the selector",
			objects: []api.Object{
				memberstest.Service("web", nil, memberstest.HTTPPort()),
				managed("web", api.EndpointSubset{Addresses: []api.EndpointAddress{{IP: "10.0.0.9"}}}),
			},
			key:    "default/web",
			absent: true,
		},
		{
			name:    "a managed Endpoints goes with its service",
			objects: []api.Object{managed("web")},
			key:     "default/web",
			absent:  true,
		},
		{
			name: "an Endpoints written by a user for a service without selector stays",
			objects: []api.Object{
				memberstest.Service("web", nil, memberstest.HTTPPort()),
				&api.Endpoints{
					ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
					Subsets:    []api.EndpointSubset{{Addresses: []api.EndpointAddress{{IP: "192.0.2.1"}}}},
				},
			},
			key:  "default/web",
			want: []api.EndpointSubset{{Addresses: []api.EndpointAddress{{IP: "192.0.2.1"}}}},
		},
		{
			name: "an ExternalName service gets none",
			objects: []api.Object{
				func() *api.Service {
					s := memberstest.Service("web", web)
					s.Spec.Type, s.Spec.ExternalName = api.ServiceTypeExternalName, "example.com"
					return s
				}(),
				memberstest.Pod("a", "10.0.0.1"),
			},
			key:    "default/web",
			absent: true,
		},
		{
			name: "a stale managed Endpoints is rewritten",
			objects: []api.Object{
				memberstest.Service("web", web, memberstest.HTTPPort()),
				memberstest.Pod("a", "10.0.0.1"),
				managed("web", api.EndpointSubset{Addresses: []api.EndpointAddress{{IP: "10.0.0.9"}}}),
			},
			key:  "default/web",
			want: []api.EndpointSubset{{Addresses: []api.EndpointAddress{addr("a", "10.0.0.1")}, Ports: []api.EndpointPort{epHTTP}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := storetest.NewMemory(t)
			for _, o := range tt.objects {
				if _, err := s.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range tt.terminate {
				if _, err := s.Delete(ctx, podKind, "default", name, store.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			r := NewReconciler(s)
			if _, err := r.Reconcile(ctx, tt.key); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			ns, name := "default", "web"
			obj, err := s.Get(endpointsKind, ns, name)
			if tt.absent {
				if !store.IsNotFound(err) {
					t.Fatalf("want no Endpoints, got %v (err %v)", dump(obj), err)
				}
			} else {
				if err != nil {
					t.Fatalf("get Endpoints: %v", err)
				}
				ep := obj.(*api.Endpoints)
				if !equality.Semantic.DeepEqual(ep.Subsets, tt.want) {
					t.Errorf("subsets:\n got %s\nwant %s", dump(ep.Subsets), dump(tt.want))
				}
				// The store takes a controller's writes unchecked: what
				// it writes must pass the API's validation, or the next
				// kubectl edit of it is refused.
				if errs := api.Validate(ep); len(errs) > 0 {
					t.Errorf("the Endpoints is invalid: %v", errs)
				}
			}

			// Level-triggered: a second reconcile writes nothing.
			rev := s.Revision()
			if _, err := r.Reconcile(ctx, tt.key); err != nil {
				t.Fatalf("second Reconcile: %v", err)
			}
			if got := s.Revision(); got != rev {
				t.Errorf("second Reconcile wrote: revision %d → %d", rev, got)
			}
		})
	}
}

func TestReconcileOwnershipAndLabels(t *testing.T) {
	ctx := context.Background()
	s := storetest.NewMemory(t)
	svcObj, err := s.Create(ctx, func() *api.Service {
		svc := memberstest.Service("web", map[string]string{"app": "web"}, memberstest.HTTPPort())
		svc.Spec.ClusterIP = api.ClusterIPNone
		return svc
	}())
	if err != nil {
		t.Fatal(err)
	}
	svc := svcObj.(*api.Service)
	r := NewReconciler(s)
	if _, err := r.Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	obj, err := s.Get(endpointsKind, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	ep := obj.(*api.Endpoints)
	ctrl := api.ControllerOf(ep)
	if ctrl == nil || ctrl.Kind != "Service" || ctrl.Name != "web" || ctrl.UID != svc.UID {
		t.Errorf("owner = %+v, want the service %s", ctrl, svc.UID)
	}
	want := map[string]string{"team": "a", LabelManagedBy: ManagedBy, members.LabelHeadless: ""}
	if !equality.Semantic.DeepEqual(ep.Labels, want) {
		t.Errorf("labels = %v, want %v", ep.Labels, want)
	}
}

func TestPodKeys(t *testing.T) {
	r := NewReconciler(nil)
	r.services.ServiceKeys(store.Event{Type: store.Added, Object: memberstest.Service("web", map[string]string{"app": "web"})})
	r.services.ServiceKeys(store.Event{Type: store.Added, Object: memberstest.Service("web-canary", map[string]string{"app": "web", "track": "canary"})})
	r.services.ServiceKeys(store.Event{Type: store.Added, Object: memberstest.Service("db", map[string]string{"app": "db"})})
	r.services.ServiceKeys(store.Event{Type: store.Added, Object: memberstest.Service("plain", nil)})

	canary := memberstest.Pod("c", "10.0.0.3", func(p *api.Pod) { p.Labels = map[string]string{"app": "web", "track": "canary"} })
	ready := memberstest.Pod("a", "10.0.0.1")
	tests := []struct {
		name string
		e    store.Event
		want []string
	}{
		{"added", store.Event{Type: store.Added, Object: ready}, []string{"default/web"}},
		{"selected by two", store.Event{Type: store.Added, Object: canary}, []string{"default/web", "default/web-canary"}},
		{"relabelled: old and new services", store.Event{Type: store.Modified, Old: ready, Object: memberstest.Pod("a", "10.0.0.1", memberstest.Labelled("app", "db"))}, []string{"default/db", "default/web"}},
		{"turned not ready", store.Event{Type: store.Modified, Old: ready, Object: memberstest.Pod("a", "10.0.0.1", memberstest.NotReady)}, []string{"default/web"}},
		{"irrelevant status change", store.Event{Type: store.Modified, Old: ready, Object: memberstest.Pod("a", "10.0.0.1", func(p *api.Pod) { p.Status.Message = "hi" })}, nil},
		{"other namespace", store.Event{Type: store.Added, Object: memberstest.Pod("a", "10.0.0.1", inNamespace("other"))}, nil},
		{"deleted", store.Event{Type: store.Deleted, Object: ready, Old: ready}, []string{"default/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.services.PodKeys(tt.e)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("keys = %v, want %v", got, tt.want)
			}
		})
	}
	// A deleted service is forgotten.
	r.services.ServiceKeys(store.Event{Type: store.Deleted, Object: memberstest.Service("web", map[string]string{"app": "web"})})
	if got := r.services.PodKeys(store.Event{Type: store.Added, Object: ready}); got != nil {
		t.Errorf("after the service went: keys = %v", got)
	}
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, d, what, func() error {
		if !cond() {
			return errors.New("condition not met")
		}
		return nil
	})
}
