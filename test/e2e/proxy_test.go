package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestProxyToPodsAndServices reaches a pod's HTTP port through the API
// server, as kubectl users do: `kubectl get --raw` through pods/proxy and
// services/proxy, by port name and number, and a browser's request
// through `kubectl proxy`.
func TestProxyToPodsAndServices(t *testing.T) {
	const ip = "127.0.0.45"
	s := startServer(t)
	startAgent(t, s, "px", ip)
	port := freePort(t, ip)
	s.applyText(t, echoDeployment("proxied", 1, port, "hello through the API server")+`---
apiVersion: v1
kind: Service
metadata:
  name: proxied
spec:
  selector: {app: proxied}
  ports:
  - {name: web, port: 80, targetPort: http}
`)
	var pod string
	waitFor(t, 60*time.Second, "the proxied pod Ready", func() error {
		pods, err := readyPods(t, s, "proxied")
		if err != nil {
			return err
		}
		for name := range pods {
			pod = name
			return nil
		}
		return fmt.Errorf("ready: %v", pods)
	})

	const ns = "/api/v1/namespaces/default/"
	want := map[string]string{
		ns + "pods/" + pod + "/proxy/":                                 "hello through the API server\n",
		ns + "pods/" + pod + ":http/proxy/healthz":                     "ok\n",
		ns + "pods/http:" + pod + fmt.Sprintf(":%d/proxy/x?y=1", port): "hello through the API server\n",
		ns + "services/proxied:web/proxy/healthz":                      "ok\n",
		ns + "services/proxied:80/proxy/":                              "hello through the API server\n",
		ns + "services/http:proxied:web/proxy/deep/path?q=a":           "hello through the API server\n",
	}
	for path, body := range want {
		// The endpoints follow the pod's readiness a moment later.
		waitFor(t, 20*time.Second, "kubectl get --raw "+path, func() error {
			out, err := s.kubectlErr(t, "get", "--raw", path)
			if err != nil || out != body {
				return fmt.Errorf("%v: %q", err, out)
			}
			return nil
		})
	}
	for path, msg := range map[string]string{
		ns + "services/nope:web/proxy/":   `services "nope" not found`,
		ns + "services/proxied:81/proxy/": `no service port 81 found for service "proxied"`,
		ns + "pods/a:b:c:d/proxy/":        `invalid pod request "a:b:c:d"`,
	} {
		if out, err := s.kubectlErr(t, "get", "--raw", path); err == nil || !strings.Contains(out, msg) {
			t.Errorf("kubectl get --raw %s: %v: %q, want %q", path, err, out, msg)
		}
	}

	// Only the admin may proxy: a service account with Kubernetes' view
	// role reads the pod but may not reach through it.
	s.grantView(t, "default", "default")
	for args, want := range map[string]string{"pods --subresource proxy": "no", "services --subresource proxy": "no", "pods": "yes"} {
		out, _ := s.kubectlErr(t, append([]string{"auth", "can-i", "get", "--as", "system:serviceaccount:default:default"}, strings.Fields(args)...)...)
		if answer, _, _ := strings.Cut(strings.TrimSpace(out), " "); answer != want {
			t.Errorf("kubectl auth can-i get %s as the default service account: %q, want %s", args, out, want)
		}
	}
	if out := strings.TrimSpace(s.kubectl(t, "auth", "can-i", "create", "services", "--subresource", "proxy")); out != "yes" {
		t.Errorf("kubectl auth can-i create services --subresource proxy as the admin: %q", out)
	}

	// kubectl proxy serves the API on a local port without credentials;
	// a browser reaches the service's page through it.
	line, stderr := startForLine(t, s.command(t, "kubectl", "proxy", "--address", "127.0.0.1", "--port", "0"))
	m := regexp.MustCompile(`Starting to serve on (127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("kubectl proxy said %q, stderr %s", line, stderr.String())
	}
	for path, body := range map[string]string{
		ns + "services/proxied:web/proxy/":      "hello through the API server\n",
		ns + "pods/" + pod + "/proxy/healthz":   "ok\n",
		ns + "services/proxied:web/proxy/index": "hello through the API server\n",
	} {
		got, err := httpGet("http://" + m[1] + path)
		if err != nil || got != body {
			t.Errorf("through kubectl proxy %s: %q, %v", path, got, err)
		}
	}
}
