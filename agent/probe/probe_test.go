package probe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

func hostPort(t *testing.T, raw string) (string, int) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(u.Port())
	return u.Hostname(), p
}

func TestHTTPGet(t *testing.T) {
	var gotHeader, gotHost string
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		gotHeader, gotHost = r.Header.Get("X-Probe"), r.Host
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/notmodified", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotModified) })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux.HandleFunc("/to-fail", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/fail", http.StatusFound) })
	mux.HandleFunc("/off-host", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://unreachable.invalid/", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tlsSrv := httptest.NewTLSServer(mux)
	defer tlsSrv.Close()
	host, port := hostPort(t, srv.URL)
	_, tlsPort := hostPort(t, tlsSrv.URL)
	target := Target{Host: host, Ports: []api.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}

	tests := []struct {
		name   string
		action api.HTTPGetAction
		want   Result
	}{
		{"200 by port number", api.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(int32(port))}, Success},
		{"named port", api.HTTPGetAction{Path: "/ok", Port: intstr.FromString("http")}, Success},
		{"path without slash", api.HTTPGetAction{Path: "ok", Port: intstr.FromString("http")}, Success},
		{"304 is success", api.HTTPGetAction{Path: "/notmodified", Port: intstr.FromString("http")}, Success},
		{"500 is failure", api.HTTPGetAction{Path: "/fail", Port: intstr.FromString("http")}, Failure},
		{"404 is failure", api.HTTPGetAction{Path: "/missing", Port: intstr.FromString("http")}, Failure},
		{"same-host redirect followed", api.HTTPGetAction{Path: "/to-fail", Port: intstr.FromString("http")}, Failure},
		{"off-host redirect not followed", api.HTTPGetAction{Path: "/off-host", Port: intstr.FromString("http")}, Success},
		{"unknown port name", api.HTTPGetAction{Path: "/ok", Port: intstr.FromString("nope")}, Unknown},
		{"https skips verification", api.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(int32(tlsPort)), Scheme: api.URISchemeHTTPS}, Success},
		{"timeout is failure", api.HTTPGetAction{Path: "/slow", Port: intstr.FromString("http")}, Failure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			a := tt.action
			got, out := Run(ctx, api.ProbeHandler{HTTPGet: &a}, target)
			if got != tt.want {
				t.Errorf("Run = %s (%s), want %s", got, out, tt.want)
			}
		})
	}

	t.Run("headers and explicit host", func(t *testing.T) {
		a := api.HTTPGetAction{Path: "/ok", Host: host, Port: intstr.FromInt32(int32(port)),
			HTTPHeaders: []api.HTTPHeader{{Name: "X-Probe", Value: "yes"}, {Name: "Host", Value: "example.test"}}}
		if got, out := Run(context.Background(), api.ProbeHandler{HTTPGet: &a}, Target{Host: "192.0.2.1"}); got != Success {
			t.Fatalf("Run = %s (%s)", got, out)
		}
		if gotHeader != "yes" || gotHost != "example.test" {
			t.Errorf("server saw X-Probe=%q Host=%q", gotHeader, gotHost)
		}
	})
}

func TestTCPSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	a := api.TCPSocketAction{Port: intstr.FromInt32(int32(port))}
	if got, out := Run(context.Background(), api.ProbeHandler{TCPSocket: &a}, Target{Host: "127.0.0.1"}); got != Success {
		t.Errorf("open port: %s (%s)", got, out)
	}
	ln.Close()
	<-done
	// The dialer's error, which names the address once, as the kubelet's.
	want := fmt.Sprintf("dial tcp 127.0.0.1:%d: connect: connection refused", port)
	if got, out := Run(context.Background(), api.ProbeHandler{TCPSocket: &a}, Target{Host: "127.0.0.1"}); got != Failure || out != want {
		t.Errorf("closed port: %s %q, want Failure %q", got, out, want)
	}
}

type execer func(id runtime.ID, argv []string) ([]byte, int, error)

func (f execer) Exec(_ context.Context, id runtime.ID, argv []string) ([]byte, int, error) {
	return f(id, argv)
}

func TestExec(t *testing.T) {
	id := runtime.ID{PodUID: "u", Name: "c", Attempt: 2}
	rt := execer(func(got runtime.ID, argv []string) ([]byte, int, error) {
		if got != id {
			return nil, 0, runtime.ErrNotFound
		}
		if argv[0] == "ok" {
			return []byte("fine\n"), 0, nil
		}
		if argv[0] == "quiet" {
			return nil, 2, nil
		}
		return []byte("sad"), 1, nil
	})
	tests := []struct {
		argv   []string
		target runtime.ID
		want   Result
		out    string
	}{
		{[]string{"ok"}, id, Success, "fine"},
		{[]string{"bad"}, id, Failure, "exited with 1: sad"},
		{[]string{"ok"}, runtime.ID{PodUID: "x"}, Unknown, "not found"},
	}
	for _, tt := range tests {
		got, out := Run(context.Background(), api.ProbeHandler{Exec: &api.ExecAction{Command: tt.argv}}, Target{Runtime: rt, ID: tt.target})
		if got != tt.want || !strings.Contains(out, tt.out) {
			t.Errorf("Run(%v) = %s %q, want %s containing %q", tt.argv, got, out, tt.want, tt.out)
		}
	}
	quiet := api.ProbeHandler{Exec: &api.ExecAction{Command: []string{"quiet"}}}
	if got, out := Run(context.Background(), quiet, Target{Runtime: rt, ID: id}); got != Failure || out != `command ["quiet"] exited with 2` {
		t.Errorf("a silent failure: %s %q", got, out)
	}
}

func TestTracker(t *testing.T) {
	timing := Timing{SuccessThreshold: 2, FailureThreshold: 3}
	tests := []struct {
		name    string
		initial Result
		results []Result
		want    []Result
	}{
		{"readiness needs two successes", Failure, []Result{Success, Success}, []Result{Failure, Success}},
		{"failure resets successes", Failure, []Result{Success, Failure, Success, Success}, []Result{Failure, Failure, Failure, Success}},
		{"liveness needs three failures", Success, []Result{Failure, Failure, Failure}, []Result{Success, Success, Failure}},
		{"a success in between resets failures", Success, []Result{Failure, Failure, Success, Failure, Failure}, []Result{Success, Success, Success, Success, Success}},
		{"unknown counts neither way", Success, []Result{Failure, Failure, Unknown, Failure}, []Result{Success, Success, Success, Failure}},
		{"startup from unknown", Unknown, []Result{Failure, Success, Success}, []Result{Unknown, Unknown, Success}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(tt.initial)
			for i, r := range tt.results {
				if got := tr.Observe(r, timing); got != tt.want[i] {
					t.Fatalf("after %d results: verdict %s, want %s", i+1, got, tt.want[i])
				}
			}
		})
	}
}

func TestTimingDefaults(t *testing.T) {
	got := TimingOf(&api.Probe{})
	want := Timing{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	if got != want {
		t.Errorf("TimingOf(empty) = %+v, want %+v", got, want)
	}
	got = TimingOf(&api.Probe{InitialDelaySeconds: 5, PeriodSeconds: 2, TimeoutSeconds: 3, SuccessThreshold: 1, FailureThreshold: 1})
	want = Timing{InitialDelay: 5 * time.Second, Period: 2 * time.Second, Timeout: 3 * time.Second, SuccessThreshold: 1, FailureThreshold: 1}
	if got != want {
		t.Errorf("TimingOf = %+v, want %+v", got, want)
	}
}
