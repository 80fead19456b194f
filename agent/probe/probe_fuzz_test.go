package probe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

// FuzzResolvePort checks that a probe's port, a number or a name, never
// resolves to a port outside 1–65535, and resolves to what it says.
func FuzzResolvePort(f *testing.F) {
	f.Add(true, int32(8080), "", "http", int32(80))
	f.Add(true, int32(0), "", "http", int32(80))
	f.Add(true, int32(70000), "", "", int32(0))
	f.Add(false, int32(0), "http", "http", int32(80))
	f.Add(false, int32(0), "http", "http", int32(0))
	f.Add(false, int32(0), "http", "http", int32(-1))
	f.Add(false, int32(0), "http", "http", int32(65536))
	f.Add(false, int32(0), "8080", "http", int32(80))
	f.Add(false, int32(0), "0", "0", int32(80))
	f.Add(false, int32(0), "", "", int32(80))
	f.Add(false, int32(0), "99999", "99999", int32(80))
	f.Fuzz(func(t *testing.T, isInt bool, n int32, name, portName string, containerPort int32) {
		p := intstr.FromString(name)
		if isInt {
			p = intstr.FromInt32(n)
		}
		ports := []api.ContainerPort{{Name: portName, ContainerPort: containerPort}}
		got, err := ResolvePort(p, ports)
		if err != nil {
			if got != 0 {
				t.Fatalf("%v: %d and error %v", p, got, err)
			}
			if msg := err.Error(); (isInt && !strings.Contains(msg, strconv.Itoa(int(n)))) || (!isInt && !strings.Contains(msg, strconv.Quote(name))) {
				t.Fatalf("%v: error %q does not name the port", p, msg)
			}
			return
		}
		if got < 1 || got > 65535 {
			t.Fatalf("%v with %+v resolves to %d", p, ports, got)
		}
		switch {
		case isInt && got != int(n):
			t.Fatalf("%v resolves to %d", p, got)
		case !isInt && strconv.Itoa(got) != strings.TrimLeft(name, "+0") && (name != portName || got != int(containerPort)):
			t.Fatalf("%q with %+v resolves to %d", name, ports, got)
		}
	})
}

// FuzzHTTPGet runs an httpGet probe of an arbitrary path and header at a
// test server that redirects where the input says: whatever the input,
// Run must not panic, must give one of the three results, and must send
// nothing to another host (a second server, on another loopback address,
// counts what it is sent). A success means the target was asked.
func FuzzHTTPGet(f *testing.F) {
	var asked, strayed atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		switch {
		case strings.HasPrefix(r.URL.Path, "/redirect"):
			w.Header()["Location"] = []string{r.URL.Query().Get("to")}
			w.WriteHeader(http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/fail"):
			http.Error(w, "failing", http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	f.Cleanup(target.Close)
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		strayed.Add(1)
	}))
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		f.Skipf("no second loopback address: %v", err)
	}
	other.Listener.Close()
	other.Listener = l
	other.Start()
	f.Cleanup(other.Close)
	host, portStr, _ := net.SplitHostPort(strings.TrimPrefix(target.URL, "http://"))
	port, _ := strconv.Atoi(portStr)

	for _, seed := range []struct{ path, header, value string }{
		{"/", "X-Probe", "1"},
		{"healthz", "Host", "example.com"},
		{"/fail", "", ""},
		{"/redirect?to=" + other.URL + "/", "X-A", "b"},
		{"/redirect?to=//" + strings.TrimPrefix(other.URL, "http://") + "/x", "", ""},
		{"/redirect?to=/fail", "", ""},
		{"/redirect?to=/redirect%3Fto%3D" + other.URL, "", ""},
		{"/redirect?to=http://127.0.0.1:1/", "", ""},
		{"/redirect?to=%00", "", ""},
		{"//evil.invalid/", "", ""},
		{"@127.0.0.2/", "", ""},
		{"/%zz", "", ""},
		{"/#frag", "Bad Header", "x"},
		{"/", "X", "line\nbreak"},
		{"/", "Host", "a b"},
	} {
		f.Add(seed.path, seed.header, seed.value)
	}
	f.Fuzz(func(t *testing.T, path, header, value string) {
		asked.Store(0)
		action := &api.HTTPGetAction{Path: path, Port: intstr.FromInt(port)}
		if header != "" {
			action.HTTPHeaders = []api.HTTPHeader{{Name: header, Value: value}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, msg := Run(ctx, api.ProbeHandler{HTTPGet: action}, Target{Host: host})
		switch res {
		case Success, Failure, Unknown:
		default:
			t.Fatalf("%q: result %q", path, res)
		}
		if msg == "" {
			t.Errorf("%q: %s with no message", path, res)
		}
		if n := strayed.Load(); n > 0 {
			t.Fatalf("%q (%s: %q): %d requests reached another host", path, header, value, n)
		}
		if res == Success && asked.Load() == 0 {
			t.Fatalf("%q: success without asking the target: %s", path, msg)
		}
	})
}
