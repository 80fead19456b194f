package ingress

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"testing/iotest"

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

// FuzzBufferBody keeps request bodies of any length, known or not, and
// any way a reader hands them out: the body read after is the body sent,
// and it can be had again exactly when it is at most MaxRetryBody long.
func FuzzBufferBody(f *testing.F) {
	f.Add([]byte("{}"), uint16(0), true, uint8(1))
	f.Add(bytes.Repeat([]byte("a"), MaxRetryBody+1), uint16(1000), false, uint8(7))
	f.Add(bytes.Repeat([]byte("b"), MaxRetryBody), uint16(0), true, uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, grow uint16, known bool, chunk uint8) {
		// The fuzzer's inputs are short: grow them past the bound at times.
		body = append(body, bytes.Repeat([]byte{'z'}, int(grow)*70)...)
		r, err := http.NewRequest(http.MethodPut, "http://a.test/", iotest.OneByteReader(bytes.NewReader(body)))
		if err != nil {
			t.Fatal(err)
		}
		if chunk > 0 {
			r.Body = io.NopCloser(io.LimitReader(bytes.NewReader(body), int64(len(body))))
		}
		r.ContentLength = -1
		if known {
			r.ContentLength = int64(len(body))
		}
		if err := bufferBody(r); err != nil {
			t.Fatal(err)
		}
		if (r.GetBody != nil) != (len(body) <= MaxRetryBody) {
			t.Fatalf("%d bytes (known %v): can be had again %v", len(body), known, r.GetBody != nil)
		}
		got, err := io.ReadAll(r.Body)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d bytes (known %v): read %d, %v", len(body), known, len(got), err)
		}
		if r.GetBody != nil {
			again, _ := r.GetBody()
			if b, _ := io.ReadAll(again); !bytes.Equal(b, body) || r.ContentLength != int64(len(body)) {
				t.Fatalf("%d bytes: again %d, length %d", len(body), len(b), r.ContentLength)
			}
		}
	})
}
