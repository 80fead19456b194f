package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/testtool"
)

// TestClusterIPBalancesAcrossPods runs `berth server --runtime
// containerd`, whose agent runs the service proxy, in a network
// namespace of the test's own: a client pod's connections to a
// Service's ClusterIP reach each of its three pods, and once one of
// them fails its readiness probe, only the other two.
func TestClusterIPBalancesAcrossPods(t *testing.T) {
	testtool.Need(t, "kubectl")
	critest.Need(t)
	if !critest.InNetns(t) {
		return
	}
	reg := critest.StartRegistry(t)
	pause := reg.Push(t, "pause:test", critest.PauseImage(t))
	// Each pod answers its name; it is ready while /tmp/w/ready.html is.
	web := reg.Push(t, "named:1", critest.BusyboxImage(t, critest.ImageConfig{
		Entrypoint: []string{"/bin/sh", "-c", `mkdir -p /tmp/w && hostname > /tmp/w/index.html && touch /tmp/w/ready.html && exec httpd -f -p 8080 -h /tmp/w`},
	}))
	idle := reg.Push(t, "idle:1", critest.BusyboxImage(t, critest.ImageConfig{Entrypoint: []string{"sleep", "3600"}}))
	dataDir := critest.TempDir(t)
	cdDir := dataDir + "/agent/containerd"
	critest.CleanUpAfter(t, cdDir)
	reg.WriteHosts(t, cdDir+"/certs.d")
	s := startServerIn(t, dataDir, "--agent=true", "--runtime", "containerd", "--pause-image", pause,
		"--cluster-cidr", "198.18.0.0/16", "--service-cidr", "198.19.0.0/16",
		"--node-name", "cip", "--node-ip", "127.0.0.1", "--agent-listen", fmt.Sprintf("127.0.0.1:%d", freePort(t, "127.0.0.1")))
	waitNodeReady(t, s, "cip", "True")

	s.applyText(t, deploymentYAML("web", 3, fmt.Sprintf(`      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: %s
        ports:
        - {name: http, containerPort: 8080}
        readinessProbe:
          httpGet: {path: /ready.html, port: http}
          periodSeconds: 1
          failureThreshold: 1
`, web))+`---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: `+idle+`}
`)
	s.kubectl(t, "wait", "--for=condition=Ready", "pod", "--all", "--timeout=120s")
	vip := s.kubectl(t, "get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")
	if !strings.HasPrefix(vip, "198.19.") {
		t.Fatalf("the Service's clusterIP is %q, not of --service-cidr", vip)
	}
	pods := strings.Fields(s.kubectl(t, "get", "pod", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}"))
	if len(pods) != 3 {
		t.Fatalf("web pods %v", pods)
	}
	// answers asks the ClusterIP 30 times from the client pod, each on
	// a connection of its own, and counts the answers by pod.
	answers := func() (map[string]int, error) {
		// busybox-static's wget crashes here; its nc does not.
		out, err := s.kubectlErr(t, "exec", "client", "--", "sh", "-c",
			`for i in $(seq 30); do printf 'GET /index.html HTTP/1.0\r\n\r\n' | nc -w 2 "$0" 80 | tail -n 1; echo; done`, vip)
		if err != nil {
			return nil, fmt.Errorf("%v: %s", err, out)
		}
		seen := map[string]int{}
		for _, l := range strings.Fields(out) {
			seen[l]++
		}
		return seen, nil
	}
	spreadOver := func(want []string) {
		t.Helper()
		waitFor(t, 60*time.Second, fmt.Sprintf("connections to %s:80 reaching each of %v and nothing else", vip, want), func() error {
			seen, err := answers()
			if err != nil {
				return err
			}
			for name := range seen {
				if !slices.Contains(want, name) {
					return fmt.Errorf("answered by %q: %v", name, seen)
				}
			}
			if len(seen) != len(want) {
				return fmt.Errorf("answered by %v", seen)
			}
			return nil
		})
	}
	spreadOver(pods)
	s.kubectl(t, "exec", pods[0], "--", "/bin/busybox", "rm", "/tmp/w/ready.html")
	spreadOver(pods[1:])
}
