package ingress

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/api"
)

// FuzzBuild builds a table from an Ingress spec of any shape (validated
// or not: the builder must never panic on what an older store holds)
// and matches hosts and paths against it.
func FuzzBuild(f *testing.F) {
	f.Add([]byte(`{"rules":[{"host":"a.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"web","port":{"number":80}}}}]}}]}`), "a.example.com", "/x")
	f.Add([]byte(`{"rules":[{"host":"*.example.com","http":{"paths":[{"path":"","backend":{"service":{"name":"web","port":{"name":"http"}}}}]}}],"tls":[{"hosts":["*.example.com"],"secretName":"s"}]}`), "b.example.com", "")
	f.Add([]byte(`{"defaultBackend":{"resource":{"kind":"Bucket","name":"b"}},"rules":[{"http":{"paths":[{"path":"/e","pathType":"Exact","backend":{}}]}}]}`), "", "/e")
	f.Fuzz(func(t *testing.T, spec []byte, host, p string) {
		var s networkingv1.IngressSpec
		if err := yaml.Unmarshal(spec, &s); err != nil {
			return
		}
		ing := &api.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fuzz"}, Spec: s}
		objs := Objects{
			Classes:        []*api.IngressClass{api.DefaultIngressClass()},
			Ingresses:      []*api.Ingress{ing, ing.DeepCopy()},
			Services:       []*api.Service{service("ns", "web", api.ServicePort{Name: "http", Port: 80})},
			Secrets:        []*api.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"tls.crt": []byte("x")}}},
			EndpointSlices: []*api.EndpointSlice{slice("ns", "web", "http", 8080, map[string]bool{"10.0.0.1": true})},
		}
		tab := Build(objs)
		for _, tlsConn := range []bool{false, true} {
			if r := tab.Match(host, p, tlsConn); r != nil && r.Unavailable == "" && r.Backend == nil {
				t.Fatalf("route without backend or reason: %+v", r)
			}
		}
		_ = tab.Certificate(host)
	})
}
