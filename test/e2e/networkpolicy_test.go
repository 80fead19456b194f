package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/testtool"
)

// TestNetworkPolicyBlocksAnotherNamespacesPod runs `berth server
// --runtime containerd`, whose agent runs the service proxy with its
// node credential, in a network namespace of the test's own: a web pod
// in shop that pods of front and back reach is cut off from both once
// a policy selects it, and front's pod reaches it again once a policy
// lets front in.
func TestNetworkPolicyBlocksAnotherNamespacesPod(t *testing.T) {
	testtool.Need(t, "kubectl")
	critest.Need(t)
	if !critest.InNetns(t) {
		return
	}
	reg := critest.StartRegistry(t)
	pause := reg.Push(t, "pause:test", critest.PauseImage(t))
	web := reg.Push(t, "web:1", critest.BusyboxImage(t, critest.ImageConfig{
		Entrypoint: []string{"/bin/sh", "-c", `exec httpd -f -p "$0" -h /www`},
		Cmd:        []string{"8080"},
	}))
	idle := reg.Push(t, "idle:1", critest.BusyboxImage(t, critest.ImageConfig{Entrypoint: []string{"sleep", "3600"}}))
	dataDir := critest.TempDir(t)
	cdDir := dataDir + "/agent/containerd"
	critest.CleanUpAfter(t, cdDir)
	reg.WriteHosts(t, cdDir+"/certs.d")
	s := startServerIn(t, dataDir, "--agent=true", "--runtime", "containerd", "--pause-image", pause, "--cluster-cidr", "198.18.0.0/16",
		"--node-name", "np", "--node-ip", "127.0.0.1", "--agent-listen", fmt.Sprintf("127.0.0.1:%d", freePort(t, "127.0.0.1")))
	waitNodeReady(t, s, "np", "True")

	pod := func(ns, name, image string, labels string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: {%s}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    ports: [{name: http, containerPort: 8080}]
`, name, ns, labels, image)
	}
	s.applyText(t, `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: front, labels: {team: frontend}}
---
apiVersion: v1
kind: Namespace
metadata: {name: back}
---
`+pod("shop", "web", web, "app: web")+"---\n"+pod("front", "client", idle, "role: client")+"---\n"+pod("back", "client", idle, "role: client"))
	for _, ns := range []string{"shop", "front", "back"} {
		s.kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "pod", "--all", "--timeout=120s")
	}
	webIP := s.kubectl(t, "get", "pod", "-n", "shop", "web", "-o", "jsonpath={.status.podIP}")
	fetch := func(ns string) error {
		// busybox-static's wget crashes here; its nc does not.
		out, err := s.kubectlErr(t, "exec", "-n", ns, "client", "--", "sh", "-c",
			`printf 'GET /index.html HTTP/1.0\r\n\r\n' | nc -w 2 "$0" 8080`, webIP)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if !strings.HasSuffix(out, "hello from an image\n") {
			return fmt.Errorf("answered %q", out)
		}
		return nil
	}
	reaches := func(ns string, want bool) {
		t.Helper()
		waitFor(t, 60*time.Second, fmt.Sprintf("%s's pod reaching web: %v", ns, want), func() error {
			err := fetch(ns)
			switch {
			case want && err != nil:
				return err
			case !want && err == nil:
				return fmt.Errorf("it still does")
			}
			return nil
		})
	}
	reaches("front", true)
	reaches("back", true)

	s.applyText(t, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: shop}
spec:
  podSelector: {}
`)
	reaches("front", false)
	reaches("back", false)

	s.applyText(t, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: from-front, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from: [{namespaceSelector: {matchLabels: {team: frontend}}}]
    ports: [{port: http}]
`)
	reaches("front", true)
	if err := fetch("back"); err == nil {
		t.Fatal("back's pod reaches web past the policies")
	}
	if out := strings.TrimSpace(s.kubectl(t, "get", "netpol", "-n", "shop", "-o", "name")); out != "networkpolicy.networking.k8s.io/deny\nnetworkpolicy.networking.k8s.io/from-front" {
		t.Errorf("kubectl get netpol: %q", out)
	}
}
