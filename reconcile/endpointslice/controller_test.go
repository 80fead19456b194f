package endpointslice

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/endpoints"
	"github.com/berth-dev/berth/reconcile/members"
	"github.com/berth-dev/berth/reconcile/members/memberstest"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
)

func TestReconcile(t *testing.T) {
	const http = "http:8080/TCP"
	ready := func(ip, pod string) row {
		return row{Type: api.AddressTypeIPv4, Ports: http, Address: ip, Pod: pod, Ready: true, Serving: true}
	}
	tests := []struct {
		name      string
		objects   []api.Object
		terminate []string // pods to delete (held by a finalizer) before reconciling
		svc       string
		want      []row
		// slices is how many slices of how many endpoints each, when it
		// matters.
		slices []int
		// hostnames are the hostnames of the endpoints of some pods, by
		// pod name, "" for none.
		hostnames map[string]string
	}{
		{
			name: "the pods the selector matches, ready or not",
			objects: []api.Object{
				memberstest.Service("web", web, memberstest.HTTPPort()),
				memberstest.Pod("a", "10.0.0.1"),
				memberstest.Pod("b", "10.0.0.2", memberstest.NotReady),
				memberstest.Pod("no-ip", ""),
				memberstest.Pod("done", "10.0.0.3", func(p *api.Pod) { p.Status.Phase = api.PodSucceeded }),
				memberstest.Pod("other-ns", "10.0.0.5", inNamespace("other")),
				memberstest.Pod("other-app", "10.0.0.6", memberstest.Labelled("app", "db")),
			},
			svc: "web",
			want: []row{
				ready("10.0.0.1", "a"),
				{Type: api.AddressTypeIPv4, Ports: http, Address: "10.0.0.2", Pod: "b"},
			},
			slices: []int{2},
		},
		{
			name: "a terminating pod is serving but not ready",
			objects: []api.Object{
				memberstest.Service("web", web, memberstest.HTTPPort()),
				memberstest.Pod("going", "10.0.0.1", terminating),
				memberstest.Pod("going-unready", "10.0.0.2", terminating, memberstest.NotReady),
			},
			terminate: []string{"going", "going-unready"},
			svc:       "web",
			want: []row{
				{Type: api.AddressTypeIPv4, Ports: http, Address: "10.0.0.1", Pod: "going", Serving: true, Terminating: true},
				{Type: api.AddressTypeIPv4, Ports: http, Address: "10.0.0.2", Pod: "going-unready", Terminating: true},
			},
		},
		{
			name: "publishNotReadyAddresses makes every endpoint ready",
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
			svc:       "web",
			want: []row{
				{Type: api.AddressTypeIPv4, Ports: http, Address: "10.0.0.1", Pod: "a", Ready: true},
				{Type: api.AddressTypeIPv4, Ports: http, Address: "10.0.0.2", Pod: "going", Ready: true, Serving: true, Terminating: true},
			},
		},
		{
			name: "pods whose ports resolve differently get slices of their own",
			objects: []api.Object{
				func() *api.Service {
					s := memberstest.Service("web", web, memberstest.HTTPPort(), memberstest.MetricsPort())
					s.Spec.Ports[0].AppProtocol = ptr.To("http")
					return s
				}(),
				memberstest.Pod("a", "10.0.0.1"),
				memberstest.Pod("b", "10.0.0.2", memberstest.NoPorts),
				memberstest.Pod("c", "10.0.0.3", func(p *api.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 8081 }),
			},
			svc: "web",
			want: []row{
				{Type: api.AddressTypeIPv4, Ports: "http:8080/TCP:http,metrics:9100/TCP", Address: "10.0.0.1", Pod: "a", Ready: true, Serving: true},
				{Type: api.AddressTypeIPv4, Ports: "http:8081/TCP:http,metrics:9100/TCP", Address: "10.0.0.3", Pod: "c", Ready: true, Serving: true},
				{Type: api.AddressTypeIPv4, Ports: "metrics:9100/TCP", Address: "10.0.0.2", Pod: "b", Ready: true, Serving: true},
			},
			slices: []int{1, 1, 1},
		},
		{
			name: "pods sharing their node's IP are endpoints apiece",
			objects: []api.Object{
				memberstest.Service("web", web, api.ServicePort{Port: 80, TargetPort: intstr.FromInt32(8080)}),
				memberstest.Pod("a", "10.0.0.1"),
				memberstest.Pod("b", "10.0.0.1"),
			},
			svc: "web",
			want: []row{
				{Type: api.AddressTypeIPv4, Ports: ":8080/TCP", Address: "10.0.0.1", Pod: "a", Ready: true, Serving: true},
				{Type: api.AddressTypeIPv4, Ports: ":8080/TCP", Address: "10.0.0.1", Pod: "b", Ready: true, Serving: true},
			},
		},
		{
			name: "a pod whose name is no DNS label gets no hostname",
			objects: []api.Object{
				memberstest.Service("web", web, memberstest.HTTPPort()),
				memberstest.Pod("web.v1", "10.0.0.1"),
				memberstest.Pod(strings.Repeat("a", 70), "10.0.0.2"),
				memberstest.Pod("web.v2", "10.0.0.3", func(p *api.Pod) { p.Spec.Hostname = "named" }),
				memberstest.Pod("a", "10.0.0.4"),
			},
			svc: "web",
			want: []row{
				ready("10.0.0.1", "web.v1"),
				ready("10.0.0.2", strings.Repeat("a", 70)),
				ready("10.0.0.3", "web.v2"),
				ready("10.0.0.4", "a"),
			},
			hostnames: map[string]string{"web.v1": "", strings.Repeat("a", 70): "", "web.v2": "named", "a": "a"},
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
			svc:  "web",
			want: []row{{Type: api.AddressTypeIPv4, Address: "10.0.0.1", Pod: "a", Ready: true, Serving: true}},
		},
		{
			name:    "more than 100 endpoints are split",
			objects: append([]api.Object{memberstest.Service("web", web, memberstest.HTTPPort())}, manyPods(250)...),
			svc:     "web",
			slices:  []int{50, 100, 100},
		},
		{
			name: "each address family has its slices",
			objects: []api.Object{
				memberstest.Service("web", web, memberstest.HTTPPort()),
				memberstest.Pod("v4", "10.0.0.1"),
				memberstest.Pod("v6", "fd00::1", memberstest.OnNode("node-6")),
				memberstest.Pod("dual", "10.0.0.2", alsoIP("fd00::2")),
			},
			svc: "web",
			want: []row{
				ready("10.0.0.1", "v4"),
				ready("10.0.0.2", "dual"),
				{Type: api.AddressTypeIPv6, Ports: http, Address: "fd00::1", Pod: "v6", Ready: true, Serving: true},
				{Type: api.AddressTypeIPv6, Ports: http, Address: "fd00::2", Pod: "dual", Ready: true, Serving: true},
			},
			slices: []int{2, 2},
		},
		{
			name:    "a service with no pods keeps an empty IPv4 slice",
			objects: []api.Object{memberstest.Service("web", web, memberstest.HTTPPort())},
			svc:     "web",
			want:    []row{{Type: api.AddressTypeIPv4}},
			slices:  []int{0},
		},
		{
			name:    "a service without a selector gets no slices",
			objects: []api.Object{memberstest.Service("web", nil, memberstest.HTTPPort()), memberstest.Pod("a", "10.0.0.1")},
			svc:     "web",
		},
		{
			name: "nor does an ExternalName service",
			objects: []api.Object{
				func() *api.Service {
					s := memberstest.Service("web", web)
					s.Spec.Type, s.Spec.ExternalName = api.ServiceTypeExternalName, "web.example.com"
					return s
				}(),
				memberstest.Pod("a", "10.0.0.1"),
			},
			svc: "web",
		},
		{
			name:    "nor a service that is not there",
			objects: []api.Object{memberstest.Pod("a", "10.0.0.1")},
			svc:     "web",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := storetest.NewMemory(t)
			create(t, s, tt.objects...)
			for _, name := range tt.terminate {
				if _, err := s.Delete(ctx, podKind, "default", name, store.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			r := NewReconciler(s)
			if _, err := r.Reconcile(ctx, "default/"+tt.svc); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			got := managedSlices(t, s, tt.svc)
			if tt.want != nil || tt.slices == nil {
				if g := rows(got); !equality.Semantic.DeepEqual(g, tt.want) {
					t.Errorf("endpoints:\n got %s\nwant %s", dump(g), dump(tt.want))
				}
			}
			if tt.slices != nil {
				var sizes []int
				for _, es := range got {
					sizes = append(sizes, len(es.Endpoints))
				}
				if fmt.Sprint(sortedInts(sizes)) != fmt.Sprint(tt.slices) {
					t.Errorf("slices of %v endpoints, want %v", sortedInts(sizes), tt.slices)
				}
			}
			svc, _ := s.Get(serviceKind, "default", tt.svc)
			for _, es := range got {
				checkMeta(t, es, svc.(*api.Service))
				for _, e := range es.Endpoints {
					if want, ok := tt.hostnames[e.TargetRef.Name]; ok && ptr.Deref(e.Hostname, "") != want {
						t.Errorf("endpoint of pod %s: hostname %q, want %q", e.TargetRef.Name, ptr.Deref(e.Hostname, ""), want)
					}
				}
			}

			// The Endpoints of the service say the same, but for the
			// second address of a pod with two families.
			if _, err := endpoints.NewReconciler(s).Reconcile(ctx, "default/"+tt.svc); err != nil {
				t.Fatal(err)
			}
			var fromEndpoints []string
			if obj, err := s.Get(api.MustLookupResource("endpoints"), "default", tt.svc); err == nil {
				fromEndpoints = readyAddresses(obj.(*api.Endpoints))
				if errs := api.Validate(obj); len(errs) > 0 {
					t.Errorf("the Endpoints is invalid: %v", errs)
				}
			}
			if fromSlices := readyEndpoints(s, got); !equality.Semantic.DeepEqual(fromSlices, fromEndpoints) {
				t.Errorf("ready in the slices %v, in the Endpoints %v", fromSlices, fromEndpoints)
			}

			// Level-triggered: a second reconcile writes nothing.
			rev := s.Revision()
			if _, err := r.Reconcile(ctx, "default/"+tt.svc); err != nil {
				t.Fatalf("second Reconcile: %v", err)
			}
			if got := s.Revision(); got != rev {
				t.Errorf("second Reconcile wrote: revision %d → %d", rev, got)
			}
		})
	}
}

// checkMeta holds a slice to what Kubernetes' controller writes: a name
// generated from the service's, kube's labels over the service's, the
// service as controlling owner, and a valid object.
func checkMeta(t *testing.T, es *api.EndpointSlice, svc *api.Service) {
	t.Helper()
	if !strings.HasPrefix(es.Name, svc.Name+"-") || es.GenerateName != svc.Name+"-" {
		t.Errorf("slice %s (generateName %q) is not named after service %s", es.Name, es.GenerateName, svc.Name)
	}
	want := map[string]string{"team": "a", api.LabelServiceName: svc.Name, api.LabelManagedBy: ManagedBy}
	if svc.Spec.ClusterIP == api.ClusterIPNone {
		want[members.LabelHeadless] = ""
	}
	if !equality.Semantic.DeepEqual(es.Labels, want) {
		t.Errorf("labels %v, want %v", es.Labels, want)
	}
	ctrl := api.ControllerOf(es)
	if ctrl == nil || ctrl.Kind != "Service" || ctrl.APIVersion != "v1" || ctrl.Name != svc.Name || ctrl.UID != svc.UID ||
		ctrl.BlockOwnerDeletion == nil || !*ctrl.BlockOwnerDeletion {
		t.Errorf("owner %+v, want the service %s blocking its deletion", ctrl, svc.UID)
	}
	if errs := api.Validate(es); len(errs) > 0 {
		t.Errorf("slice %s is invalid: %v", es.Name, errs)
	}
}

func sortedInts(v []int) []int { return slices.Sorted(slices.Values(v)) }
