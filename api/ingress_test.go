package api

import (
	"os"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateIngress(t *testing.T) {
	prefix := networkingv1.PathTypePrefix
	runValidation(t, func() *Ingress {
		return &Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: &prefix,
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}},
				}}},
			}}},
		}}
	}, []validationCase[*Ingress]{
		{"wildcard host", func(o *Ingress) { o.Spec.Rules[0].Host = "*.example.com" }, nil},
		{"wildcard inside", func(o *Ingress) { o.Spec.Rules[0].Host = "a.*.example.com" },
			[]string{`spec.rules[0].host: Invalid value: "a.*.example.com"`}},
		{"relative path", func(o *Ingress) { o.Spec.Rules[0].HTTP.Paths[0].Path = "api" },
			[]string{`spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path`}},
		{"no path type", func(o *Ingress) { o.Spec.Rules[0].HTTP.Paths[0].PathType = nil },
			[]string{`spec.rules[0].http.paths[0].pathType: Required value`}},
		{"port name and number", func(o *Ingress) { o.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name = "http" },
			[]string{`spec.rules[0].http.paths[0].backend.service.port: Invalid value`}},
		{"no port", func(o *Ingress) { o.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number = 0 },
			[]string{`spec.rules[0].http.paths[0].backend.service.port: Required value`}},
		{"no backend", func(o *Ingress) { o.Spec.Rules[0].HTTP.Paths[0].Backend.Service = nil },
			[]string{`spec.rules[0].http.paths[0].backend: Invalid value`}},
		{"nothing", func(o *Ingress) { o.Spec.Rules = nil },
			[]string{"spec: Invalid value: \"\": either `defaultBackend` or `rules` must be specified"}},
		{"bad tls secret", func(o *Ingress) { o.Spec.TLS = []networkingv1.IngressTLS{{SecretName: "Bad_Name"}} },
			[]string{`spec.tls[0].secretName: Invalid value: "Bad_Name"`}},
	})
}

func TestValidateIngressClass(t *testing.T) {
	runValidation(t, DefaultIngressClass, []validationCase[*IngressClass]{
		{"no controller", func(o *IngressClass) { o.Spec.Controller = "" }, []string{"spec.controller: Required value"}},
		{"not domain-prefixed", func(o *IngressClass) { o.Spec.Controller = "nginx" }, []string{`spec.controller: Invalid value: "nginx"`}},
	})
}

// TestBadIngressManifest names the file, document and field of each error.
func TestBadIngressManifest(t *testing.T) {
	data, err := os.ReadFile("testdata/manifests/bad/ingress.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, errs := DecodeStream("bad/ingress.yaml", data, DecodeOptions{})
	for _, d := range objs {
		errs = append(errs, d.DefaultAndValidate()...)
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"bad/ingress.yaml", "spec.rules[0].host", "spec.rules[0].http.paths[0].path", "spec.rules[0].http.paths[1].pathType", "spec.rules[0].http.paths[1].backend.service.port"} {
		if !strings.Contains(all, want) {
			t.Errorf("errors do not name %q:\n%s", want, all)
		}
	}
}

func TestIngressServedBy(t *testing.T) {
	berth := DefaultIngressClass()
	other := &IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}, Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}
	classes := []*IngressClass{berth, other}
	def := DefaultIngressClassName(classes)
	if def != IngressClassBerth {
		t.Fatalf("default class %q", def)
	}
	name := func(s string) *string { return &s }
	for _, tc := range []struct {
		ing  *Ingress
		want bool
	}{
		{&Ingress{}, true},
		{&Ingress{Spec: networkingv1.IngressSpec{IngressClassName: name("berth")}}, true},
		{&Ingress{Spec: networkingv1.IngressSpec{IngressClassName: name("nginx")}}, false},
		{&Ingress{Spec: networkingv1.IngressSpec{IngressClassName: name("gone")}}, false},
		{&Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationIngressClass: "nginx"}}}, false},
	} {
		if got := IngressServedBy(tc.ing, IngressControllerBerth, classes, def); got != tc.want {
			t.Errorf("%+v: served %v, want %v", tc.ing, got, tc.want)
		}
	}
	if IngressServedBy(&Ingress{}, IngressControllerBerth, []*IngressClass{other}, "") {
		t.Error("an Ingress without class is served without a default class")
	}
}
