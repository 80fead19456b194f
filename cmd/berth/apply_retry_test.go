package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/testtool"
)

// A control plane that answers a write 503 (leadership changing hands)
// costs `berth apply` a second, not the apply: the client sends the
// create again after the Retry-After.
func TestApplyRidesThroughServiceUnavailable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cfg, err := client.LoadKubeconfig(startControlPlane(t))
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Server)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cfg.CAData)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	var refused atomic.Int32
	front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && refused.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no control plane leads the cluster yet; try again","reason":"ServiceUnavailable","details":{"retryAfterSeconds":1},"code":503}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	kubeconfig := testtool.WriteKubeconfig(t, testtool.Kubeconfig{Server: front.URL, Token: cfg.Token})
	berth := func(args ...string) result {
		t.Helper()
		return runBerth(t, "", append(args, "--kubeconfig", kubeconfig)...)
	}
	waitReady(t, func() bool { return berth("get", "ns", "default").code == exitOK })
	r := berth("apply", "-f", "testdata/apply/app.yaml")
	want := "namespace/shop created\nconfigmap/settings created\nservice/web created\ndeployment.apps/web created\n"
	if r.code != exitOK || r.stdout != want {
		t.Fatalf("apply through a 503: exit %d\n%s\nwant\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	if n := refused.Load(); n < 2 {
		t.Fatalf("the proxy saw %d creates", n)
	}
}
