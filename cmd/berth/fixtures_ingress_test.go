package main

import (
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/berth-dev/berth/api"
)

// fixtureIngresses: one with two hosts, a path, TLS and an address, one
// of another class that has none yet.
func fixtureIngresses() []api.Object {
	prefix := networkingv1.PathTypePrefix
	berth, nginx := api.IngressClassBerth, "nginx"
	be := func(svc string, port int32) networkingv1.IngressBackend {
		return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: port}}}
	}
	rule := func(host string, paths ...networkingv1.HTTPIngressPath) networkingv1.IngressRule {
		return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}}
	}
	shop := &api.Ingress{ObjectMeta: meta("default", "shop", 2*day, nil), Spec: networkingv1.IngressSpec{
		IngressClassName: &berth,
		TLS:              []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}},
		Rules: []networkingv1.IngressRule{
			rule("shop.example.com", networkingv1.HTTPIngressPath{Path: "/", PathType: &prefix, Backend: be("web", 80)},
				networkingv1.HTTPIngressPath{Path: "/api", PathType: &prefix, Backend: be("api", 8080)}),
			rule("admin.example.com", networkingv1.HTTPIngressPath{Path: "/", PathType: &prefix, Backend: be("admin", 80)}),
		}},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{
			Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "198.18.0.1"}}}}}
	other := &api.Ingress{ObjectMeta: meta("default", "legacy", 5*time.Minute, nil), Spec: networkingv1.IngressSpec{
		IngressClassName: &nginx, DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
	return []api.Object{shop, other}
}

// fixtureIngressClasses: berth's default class and one with parameters.
func fixtureIngressClasses() []api.Object {
	b := api.DefaultIngressClass()
	b.ObjectMeta = meta("", b.Name, 10*day, nil)
	b.Annotations = map[string]string{api.AnnotationDefaultIngressClass: "true"}
	group := "k8s.example.com"
	nginx := &api.IngressClass{ObjectMeta: meta("", "nginx", 3*day, nil), Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx",
		Parameters: &networkingv1.IngressClassParametersReference{APIGroup: &group, Kind: "IngressParameters", Name: "external"}}}
	return []api.Object{b, nginx}
}
