package ingress

import (
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

func ptr[T any](v T) *T { return &v }

func service(ns, name string, ports ...api.ServicePort) *api.Service {
	return &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: api.ServiceSpec{Ports: ports}}
}

// slice makes one EndpointSlice of a service: port name "" unless given,
// endpoints as address → ready (a false one is serving and terminating).
func slice(ns, svc, portName string, port int32, eps map[string]bool) *api.EndpointSlice {
	es := &api.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svc + "-x", Labels: map[string]string{api.LabelServiceName: svc}},
		AddressType: api.AddressTypeIPv4,
		Ports:       []api.EndpointSlicePort{{Name: ptr(portName), Port: ptr(port)}},
	}
	for addr, ready := range eps {
		c := api.EndpointConditions{Ready: ptr(ready), Serving: ptr(true), Terminating: ptr(!ready)}
		es.Endpoints = append(es.Endpoints, api.Endpoint{Addresses: []string{addr}, Conditions: c})
	}
	return es
}

func path(p string, pt networkingv1.PathType, svc string, port int32) networkingv1.HTTPIngressPath {
	return networkingv1.HTTPIngressPath{Path: p, PathType: &pt, Backend: networkingv1.IngressBackend{
		Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: port}}}}
}

func ingress(ns, name string, age int, rules ...networkingv1.IngressRule) *api.Ingress {
	return &api.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		CreationTimestamp: metav1.NewTime(time.Unix(1000+int64(age), 0))},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr(api.IngressClassBerth), Rules: rules}}
}

func rule(host string, paths ...networkingv1.HTTPIngressPath) networkingv1.IngressRule {
	return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}}
}

const (
	prefix  = networkingv1.PathTypePrefix
	exact   = networkingv1.PathTypeExact
	implSpc = networkingv1.PathTypeImplementationSpecific
)

func TestMatch(t *testing.T) {
	web := service("shop", "web", api.ServicePort{Name: "http", Port: 80})
	apiSvc := service("shop", "api", api.ServicePort{Port: 8080})
	objs := Objects{
		Classes:  []*api.IngressClass{api.DefaultIngressClass()},
		Services: []*api.Service{web, apiSvc},
		EndpointSlices: []*api.EndpointSlice{
			slice("shop", "web", "http", 9000, map[string]bool{"10.0.0.1": true, "10.0.0.2": true, "10.0.0.3": false}),
			slice("shop", "api", "", 9100, map[string]bool{"10.0.0.9": false}),
		},
		Ingresses: []*api.Ingress{
			ingress("shop", "main", 0,
				rule("shop.example.com", path("/", prefix, "web", 80), path("/api", prefix, "api", 8080), path("/exact", exact, "api", 8080)),
				rule("*.example.com", path("/", implSpc, "api", 8080)),
				rule("", path("/any", prefix, "web", 80))),
			// Younger: its /api for the same host loses; its own path stays.
			ingress("shop", "late", 5, rule("shop.example.com", path("/api", prefix, "web", 80), path("/api/v2", prefix, "missing", 80))),
			// Another class's.
			{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "nginx"}, Spec: networkingv1.IngressSpec{IngressClassName: ptr("nginx"),
				Rules: []networkingv1.IngressRule{rule("nginx.test", path("/", prefix, "web", 80))}}},
		},
	}
	tab := Build(objs)
	for _, tc := range []struct {
		host, path string
		ingress    string
		backend    string
		unavail    bool
	}{
		{"shop.example.com", "/", "main", "shop/web:80", false},
		{"SHOP.example.com:8080", "/cart", "main", "shop/web:80", false},
		{"shop.example.com", "/api", "main", "shop/api:8080", false},
		{"shop.example.com", "/api/", "main", "shop/api:8080", false},
		{"shop.example.com", "/api/x", "main", "shop/api:8080", false},
		{"shop.example.com", "/apix", "main", "shop/web:80", false},
		{"shop.example.com", "/api/v2/x", "late", "", true},
		{"shop.example.com", "/exact", "main", "shop/api:8080", false},
		{"shop.example.com", "/exact/", "main", "shop/web:80", false},
		{"a.example.com", "/whatever", "main", "shop/api:8080", false},
		{"a.b.example.com", "/any", "main", "shop/web:80", false},
		{"nginx.test", "/", "", "", false},
		{"nginx.example.com", "/", "main", "shop/api:8080", false},
		{"other.test", "/any/thing", "main", "shop/web:80", false},
	} {
		r := tab.Match(tc.host, tc.path, false)
		if tc.ingress == "" {
			if r != nil {
				t.Errorf("%s%s: matched %s/%s %s", tc.host, tc.path, r.Namespace, r.Ingress, r.Path)
			}
			continue
		}
		if r == nil {
			t.Errorf("%s%s: no match", tc.host, tc.path)
			continue
		}
		if r.Ingress != tc.ingress || (r.Unavailable != "") != tc.unavail || (r.Backend != nil && r.Backend.Name != tc.backend) {
			t.Errorf("%s%s: got %s %+v %q", tc.host, tc.path, r.Ingress, r.Backend, r.Unavailable)
		}
	}
	// Ready endpoints only; the terminating one when none is ready.
	if got := tab.Match("shop.example.com", "/", false).Backend.Addrs; len(got) != 2 || got[0] != "10.0.0.1:9000" || got[1] != "10.0.0.2:9000" {
		t.Errorf("web endpoints %v", got)
	}
	if got := tab.Match("shop.example.com", "/api", false).Backend.Addrs; len(got) != 1 || got[0] != "10.0.0.9:9100" {
		t.Errorf("api endpoints %v", got)
	}
	if len(tab.Problems) != 1 || tab.Problems[0].Reason != ReasonServiceNotFound || tab.Problems[0].Ingress != "late" {
		t.Errorf("problems %+v", tab.Problems)
	}
}

func TestTLS(t *testing.T) {
	certPEM, keyPEM := testCert(t, "shop.example.com", "*.shop.example.com")
	ing := ingress("shop", "main", 0, rule("shop.example.com", path("/", prefix, "web", 80)), rule("broken.example.com", path("/", prefix, "web", 80)))
	ing.Spec.TLS = []networkingv1.IngressTLS{
		{Hosts: []string{"shop.example.com", "*.shop.example.com"}, SecretName: "shop-tls"},
		{Hosts: []string{"broken.example.com"}, SecretName: "missing"},
	}
	tab := Build(Objects{
		Classes:   []*api.IngressClass{api.DefaultIngressClass()},
		Services:  []*api.Service{service("shop", "web", api.ServicePort{Port: 80})},
		Ingresses: []*api.Ingress{ing},
		Secrets: []*api.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop-tls"}, Type: api.SecretTypeTLS,
			Data: map[string][]byte{api.TLSCertKey: certPEM, api.TLSPrivateKey: keyPEM}}},
	})
	if tab.Certificate("shop.example.com") == nil || tab.Certificate("a.shop.example.com") == nil {
		t.Error("no certificate for the Secret's hosts")
	}
	if tab.Certificate("a.b.shop.example.com") != nil || tab.Certificate("other.example.com") != nil {
		t.Error("a certificate for a name the Secret does not cover")
	}
	if r := tab.Match("broken.example.com", "/", true); r == nil || r.Unavailable == "" {
		t.Errorf("HTTPS to a host whose Secret is missing: %+v", r)
	}
	if r := tab.Match("broken.example.com", "/", false); r == nil || r.Unavailable != "" {
		t.Errorf("HTTP to a host whose Secret is missing: %+v", r)
	}
	if r := tab.Match("shop.example.com", "/", true); r == nil || r.Unavailable != "" {
		t.Errorf("HTTPS to a host with its Secret: %+v", r)
	}
	if len(tab.Problems) != 1 || tab.Problems[0].Reason != ReasonSecretNotFound {
		t.Errorf("problems %+v", tab.Problems)
	}
}

func TestDefaultBackend(t *testing.T) {
	ing := ingress("shop", "main", 0)
	ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}
	tab := Build(Objects{Classes: []*api.IngressClass{api.DefaultIngressClass()}, Ingresses: []*api.Ingress{ing},
		Services: []*api.Service{service("shop", "web", api.ServicePort{Port: 80})}})
	if r := tab.Match("any.host", "/x", false); r == nil || r.Backend == nil || r.Backend.Name != "shop/web:80" {
		t.Errorf("default backend: %+v", r)
	}
}
