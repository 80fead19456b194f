package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestIngressRoutesToPods: `berth server` with the Ingress proxy on
// loopback ports routes two hosts and a path to two Deployments' pods
// (exec runtime: the endpoints are the node's address and the pods'
// ports), over HTTP and HTTPS (the fallback certificate: no Secret),
// and `kubectl get ing` shows the default class and the address.
func TestIngressRoutesToPods(t *testing.T) {
	httpPort, httpsPort := freePort(t, "127.0.0.1"), freePort(t, "127.0.0.1")
	s := startServer(t, "--ingress-listen", fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", httpPort, httpsPort))
	startAgent(t, s, "n1", "127.0.0.21")
	webPort, apiPort := freePort(t, "127.0.0.21"), freePort(t, "127.0.0.21")
	s.applyText(t, echoDeployment("web", 1, webPort, "hello from web"))
	s.applyText(t, echoDeployment("api", 1, apiPort, "hello from api"))
	s.applyText(t, `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: api}
spec:
  selector: {app: api}
  ports: [{name: http, port: 8080, targetPort: http}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop}
spec:
  tls:
  - hosts: [shop.test]
  rules:
  - host: shop.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
      - {path: /api, pathType: Prefix, backend: {service: {name: api, port: {name: http}}}}
  - host: api.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: api, port: {number: 8080}}}}
`)
	get := func(scheme, host, path string) (int, string, error) {
		port := httpPort
		if scheme == "https" {
			port = httpsPort
		}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{ServerName: host, InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
		defer c.CloseIdleConnections()
		req, err := http.NewRequest("GET", fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, port, path), nil)
		if err != nil {
			return 0, "", err
		}
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	for _, tc := range []struct{ scheme, host, path, want string }{
		{"http", "shop.test", "/", "hello from web"},
		{"http", "shop.test", "/api/orders", "hello from api"},
		{"http", "api.test", "/", "hello from api"},
		{"https", "shop.test", "/cart", "hello from web"},
		{"https", "shop.test", "/api", "hello from api"},
	} {
		waitFor(t, 90*time.Second, tc.scheme+"://"+tc.host+tc.path, func() error {
			code, body, err := get(tc.scheme, tc.host, tc.path)
			if err != nil || code != http.StatusOK || !strings.Contains(body, tc.want) {
				return fmt.Errorf("%d %q %v", code, body, err)
			}
			return nil
		})
	}
	if code, _, err := get("http", "other.test", "/"); err != nil || code != http.StatusNotFound {
		t.Errorf("a host without rules: %d %v, want 404", code, err)
	}
	waitFor(t, 30*time.Second, "kubectl get ing", func() error {
		out := s.kubectl(t, "get", "ing")
		if !strings.Contains(out, "shop   berth   shop.test,api.test   127.0.0.1   80, 443") {
			return fmt.Errorf("%s", out)
		}
		return nil
	})
}
