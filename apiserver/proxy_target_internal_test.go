package apiserver

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// proxyTestPod has two containers; the second's ports come after the
// first's.
func proxyTestPod(ip string) *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: api.PodSpec{Containers: []api.Container{
			{Name: "side"},
			{Name: "main", Ports: []api.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "admin", ContainerPort: 9090}}},
		}},
		Status: api.PodStatus{PodIP: ip},
	}
}

func TestParseProxyTarget(t *testing.T) {
	for _, c := range []struct {
		id   string
		want proxyTarget
		ok   bool
	}{
		{"web", proxyTarget{name: "web"}, true},
		{"web:8080", proxyTarget{name: "web", port: "8080"}, true},
		{"web:http", proxyTarget{name: "web", port: "http"}, true},
		{"https:web:443", proxyTarget{scheme: "https", name: "web", port: "443"}, true},
		{"http:web:", proxyTarget{scheme: "http", name: "web"}, true},
		{":web:80", proxyTarget{name: "web", port: "80"}, true},
		{"ftp:web:21", proxyTarget{}, false},
		{":80", proxyTarget{}, false},
		{"", proxyTarget{}, false},
		{"a:b:c:d", proxyTarget{}, false},
	} {
		got, ok := parseProxyTarget(c.id)
		if got != c.want || ok != c.ok {
			t.Errorf("parseProxyTarget(%q) = %+v, %v; want %+v, %v", c.id, got, ok, c.want, c.ok)
		}
	}
}

// TestPodProxyHost follows Kubernetes' pod ResourceLocation: the port
// named, else the first container port declared, else none.
func TestPodProxyHost(t *testing.T) {
	noPorts := proxyTestPod("10.0.0.7")
	noPorts.Spec.Containers[1].Ports = nil
	v6 := proxyTestPod("fd00::7")
	for _, c := range []struct {
		pod  *api.Pod
		port string
		want string
		code int32
	}{
		{proxyTestPod("10.0.0.7"), "", "10.0.0.7:8080", 0},
		{proxyTestPod("10.0.0.7"), "9090", "10.0.0.7:9090", 0},
		{proxyTestPod("10.0.0.7"), "1234", "10.0.0.7:1234", 0}, // a port no container declares, as Kubernetes allows
		{proxyTestPod("10.0.0.7"), "admin", "10.0.0.7:9090", 0},
		{proxyTestPod("127.0.0.45"), "http", "127.0.0.45:8080", 0},
		{v6, "http", "[fd00::7]:8080", 0},
		{noPorts, "", "10.0.0.7", 0},
		{proxyTestPod("10.0.0.7"), "nope", "", 400},
		{proxyTestPod("10.0.0.7"), "0", "", 400},
		{proxyTestPod("10.0.0.7"), "-1", "", 400},
		{proxyTestPod(""), "", "", 503},
		{proxyTestPod("169.254.169.254"), "", "", 400},
		{proxyTestPod("0.0.0.0"), "", "", 400},
		{proxyTestPod("224.0.0.1"), "", "", 400},
		{proxyTestPod("not-an-ip"), "", "", 400},
	} {
		got, err := podProxyHost(c.pod, proxyTarget{name: "web", port: c.port})
		if got != c.want || statusCode(err) != c.code {
			t.Errorf("pod at %q port %q: %q, %v; want %q, code %d", c.pod.Status.PodIP, c.port, got, err, c.want, c.code)
		}
	}
}

// TestServiceProxyHost follows Kubernetes' service ResourceLocation: a
// port number becomes the service port's name, which picks the endpoint
// port; only ready addresses whose pod still holds them are used.
func TestServiceProxyHost(t *testing.T) {
	svc := &api.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:       api.ServiceSpec{Ports: []api.ServicePort{{Name: "http", Port: 80}, {Name: "metrics", Port: 9100}}},
	}
	eps := &api.Endpoints{Subsets: []api.EndpointSubset{
		{NotReadyAddresses: []api.EndpointAddress{{IP: "10.0.0.9"}}, Ports: []api.EndpointPort{{Name: "http", Port: 8080}}},
		{Addresses: []api.EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}}, Ports: []api.EndpointPort{{Name: "http", Port: 8080}, {Name: "metrics", Port: 9101}}},
	}}
	only := func(ip string) func(api.EndpointAddress) bool {
		return func(a api.EndpointAddress) bool { return a.IP == ip }
	}
	all := func(api.EndpointAddress) bool { return true }
	for _, c := range []struct {
		port  string
		eps   *api.Endpoints
		valid func(api.EndpointAddress) bool
		want  []string
		code  int32
	}{
		{"http", eps, all, []string{"10.0.0.1:8080", "10.0.0.2:8080"}, 0},
		{"80", eps, all, []string{"10.0.0.1:8080", "10.0.0.2:8080"}, 0},
		{"9100", eps, only("10.0.0.2"), []string{"10.0.0.2:9101"}, 0},
		{"metrics", eps, only("10.0.0.1"), []string{"10.0.0.1:9101"}, 0},
		{"81", eps, all, nil, 503},
		{"", eps, all, nil, 503},                  // the unnamed port, which this service has not
		{"http", eps, only("10.0.0.9"), nil, 503}, // only the not-ready address is its pod's
		{"http", nil, all, nil, 503},
		{"http", &api.Endpoints{}, all, nil, 503},
		{"99999", eps, all, nil, 400},
	} {
		got, err := serviceProxyHost(svc, c.eps, proxyTarget{name: "web", port: c.port}, "web:"+c.port, c.valid)
		ok := got == "" && c.want == nil
		for _, w := range c.want {
			ok = ok || got == w
		}
		if !ok || statusCode(err) != c.code {
			t.Errorf("service port %q: %q, %v; want one of %q, code %d", c.port, got, err, c.want, c.code)
		}
	}
}

func statusCode(err error) int32 {
	if err == nil {
		return 0
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Code
	}
	return -1
}

// FuzzParseProxyTarget: any name segment is read without a panic; one
// that is accepted, written again, reads the same, and finding its pod or service
// address refuses with a 400 or 503 Status, never anything else.
func FuzzParseProxyTarget(f *testing.F) {
	for _, s := range []string{"web", "web:80", "https:web:443", "web:http", "a:b:c:d", ":80", ""} {
		f.Add(s)
	}
	pod := proxyTestPod("10.0.0.7")
	svc := &api.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: api.ServiceSpec{Ports: []api.ServicePort{{Name: "http", Port: 80}}}}
	eps := &api.Endpoints{Subsets: []api.EndpointSubset{{Addresses: []api.EndpointAddress{{IP: "10.0.0.7"}}, Ports: []api.EndpointPort{{Name: "http", Port: 8080}}}}}
	f.Fuzz(func(t *testing.T, id string) {
		tg, ok := parseProxyTarget(id)
		if !ok {
			return
		}
		if again, ok := parseProxyTarget(tg.String()); !ok || again != tg {
			t.Fatalf("%q read as %+v, written %q, read again as %+v", id, tg, tg.String(), again)
		}
		if tg.name == "" || strings.Contains(tg.name+tg.port+tg.scheme, ":") {
			t.Fatalf("%q read as %+v", id, tg)
		}
		for what, fn := range map[string]func() error{
			"pod": func() error { _, err := podProxyHost(pod, tg); return err },
			"service": func() error {
				_, err := serviceProxyHost(svc, eps, tg, id, func(api.EndpointAddress) bool { return true })
				return err
			},
		} {
			if code := statusCode(fn()); code != 0 && code != 400 && code != 503 {
				t.Fatalf("%s of %q: code %d", what, id, code)
			}
		}
	})
}

// TestProxiedLocation follows Kubernetes' proxy transport: a path of the
// pod's, or its own address, goes under the proxy path, unless an app that
// knows its external URL put it there already; other hosts and relative
// links stay.
func TestProxiedLocation(t *testing.T) {
	const prefix = "/api/v1/namespaces/default/services/web:http/proxy"
	for _, c := range []struct {
		loc, want string
		ok        bool
	}{
		{"/login?next=%2Fa#top", prefix + "/login?next=%2Fa#top", true},
		{"http://10.0.0.7:8080/own/", prefix + "/own/", true},
		{"http://10.0.0.7:8080", prefix + "/", true},
		{"/", prefix + "/", true},
		{prefix + "/login", "", false},
		{prefix + "/", "", false},
		{prefix, "", false},
		{"http://10.0.0.7:8080" + prefix + "/public/app.js", prefix + "/public/app.js", true},
		{prefix + "x/y", prefix + prefix + "x/y", true},     // a longer segment is not the proxy path
		{"https://api.example:6443/x", prefix + "/x", true}, // the host the caller asked
		{"https://example.com/x", "", false},
		{"next/page", "", false},
		{"mailto:a@b", "", false},
	} {
		got, ok := proxiedLocation(c.loc, prefix, "10.0.0.7:8080", "api.example:6443")
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("proxiedLocation(%q) = %q, %v; want %q, %v", c.loc, got, ok, c.want, c.ok)
		}
	}
}

// FuzzRewriteLinks: any page a pod answers is rewritten without a panic,
// and a page with no attribute in it (nothing to rewrite) comes back
// byte for byte.
func FuzzRewriteLinks(f *testing.F) {
	for _, s := range []string{
		`<a href="/x">x</a>`,
		`<img src='http://pod:80/y.png'/><a href=rel>r</a>`,
		`<form action="//other/z"><p>text</p>`,
		`<a href="/%zz">bad escape</a><!-- <a href="/c"> -->`,
		`<script>if (a < b) { x = "<a href='/s'>" }</script>`,
		`<svg><a xlink:href="/svg"/></svg>`,
		"plain text, no tags",
		"<",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		out := rewriteLinks(page, "/api/v1/namespaces/default/pods/web/proxy", "pod:80", "api:6443")
		if !bytes.Contains(page, []byte("=")) && !bytes.Equal(out, page) {
			t.Fatalf("a page with no attributes changed:\n%q\n%q", page, out)
		}
	})
}
