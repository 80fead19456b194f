package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// readyFileDeployment runs http-echo pods that are ready while a file of
// their emptyDir volume exists: the test takes one pod out of service by
// removing its file, while its process keeps running.
func readyFileDeployment(name string, replicas, port int) string {
	script := fmt.Sprintf(`touch "$BERTH_VOLUME_STATE/ready" && exec %q toolbox http-echo --listen "$POD_IP:%d" --text "$POD_NAME"`, bin, port)
	return deploymentYAML(name, replicas, fmt.Sprintf(`      terminationGracePeriodSeconds: 2
      volumes:
      - {name: state, emptyDir: {}}
      containers:
      - name: echo
        image: berth
        command: [/bin/sh, -c, %[1]q]
        env:
        - name: POD_IP
          valueFrom: {fieldRef: {fieldPath: status.podIP}}
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        ports:
        - {name: http, containerPort: %[2]d}
        readinessProbe:
          exec:
            command: [/bin/sh, -c, 'test -f "$BERTH_VOLUME_STATE/ready"']
          periodSeconds: 1
          failureThreshold: 1
`, script, port)) + fmt.Sprintf(`---
apiVersion: v1
kind: Service
metadata:
  name: %[1]s
spec:
  # headless: the name resolves to the pods, which need no service proxy
  clusterIP: None
  selector: {app: %[1]s}
  ports:
  - {name: http, port: %[2]d, targetPort: http}
`, name, port)
}

// TestDNSOfRunningPods runs a Service over pods on two agents and asks
// the cluster DNS with dig: the service name answers the IPs of the ready
// pods, its SRV name both with the port, a pod that turns unready leaves
// both within seconds and comes back when ready again, and scaling down
// takes the pod that goes out of the answer.
func TestDNSOfRunningPods(t *testing.T) {
	digPath := testtool.Need(t, "dig")
	s := startServer(t)
	agents := map[string]*agent{}
	for _, n := range []struct{ name, ip string }{{"n3", "127.0.0.3"}, {"n4", "127.0.0.4"}} {
		agents[n.name] = startAgent(t, s, n.name, n.ip)
	}
	port := freePort(t, "127.0.0.3")
	s.applyText(t, readyFileDeployment("web", 2, port))

	dig := func(args ...string) []string {
		t.Helper()
		all := append([]string{"@127.0.0.1", "-p", fmt.Sprint(s.dnsPort), "+time=2", "+tries=1", "+short"}, args...)
		out, err := exec.Command(digPath, all...).CombinedOutput()
		if err != nil {
			t.Fatalf("dig %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		var answers []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				answers = append(answers, l)
			}
		}
		slices.Sort(answers)
		return answers
	}
	const name = "web.default.svc.cluster.local"
	wantA := func(ips ...string) func() error {
		slices.Sort(ips)
		return func() error {
			if got := dig(name, "A"); !slices.Equal(got, ips) {
				return fmt.Errorf("A %s: %q, want %q", name, got, ips)
			}
			return nil
		}
	}
	waitFor(t, 60*time.Second, "the two ready pods in DNS", wantA("127.0.0.3", "127.0.0.4"))

	// SRV: both pods, each with the port, each target resolving to its IP.
	srv := dig("_http._tcp."+name, "SRV")
	if len(srv) != 2 {
		t.Fatalf("SRV _http._tcp.%s: %q", name, srv)
	}
	var targetIPs []string
	for _, rr := range srv {
		f := strings.Fields(rr) // priority weight port target
		if len(f) != 4 || f[2] != fmt.Sprint(port) || !strings.HasSuffix(f[3], "."+name+".") {
			t.Fatalf("SRV record %q: want port %d and a target under %s", rr, port, name)
		}
		targetIPs = append(targetIPs, dig(f[3], "A")...)
	}
	if slices.Sort(targetIPs); !slices.Equal(targetIPs, []string{"127.0.0.3", "127.0.0.4"}) {
		t.Fatalf("SRV targets resolve to %q", targetIPs)
	}

	// The pod on n4 turns unready while its process runs on.
	pods, err := podsOf(t, s, "web")
	if err != nil {
		t.Fatal(err)
	}
	var uid string
	for _, p := range pods {
		if field(p, "spec.nodeName") == "n4" {
			uid, _ = field(p, "metadata.uid").(string)
		}
	}
	if uid == "" {
		t.Fatalf("no web pod on n4: %v", pods)
	}
	ready := filepath.Join(agents["n4"].dataDir, "pods", uid, "volumes", "state", "ready")
	if err := os.Remove(ready); err != nil {
		t.Fatal(err)
	}
	unready := time.Now()
	waitFor(t, 10*time.Second, "the unready pod out of DNS", wantA("127.0.0.3"))
	t.Logf("unready pod left DNS after %v", time.Since(unready).Round(100*time.Millisecond))
	waitFor(t, 10*time.Second, "the unready pod out of SRV", func() error {
		if got := dig("_http._tcp."+name, "SRV"); len(got) != 1 {
			return fmt.Errorf("SRV: %q", got)
		}
		return nil
	})
	if body, err := httpGet(fmt.Sprintf("http://127.0.0.4:%d/", port)); err != nil {
		t.Errorf("the unready pod stopped (it should only be out of service): %q %v", body, err)
	}

	// Ready again: back in DNS.
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the pod back in DNS", wantA("127.0.0.3", "127.0.0.4"))

	// Scaled to one: the pod going is out of DNS as soon as it starts
	// terminating, well within its grace period.
	s.applyText(t, readyFileDeployment("web", 1, port))
	scaled := time.Now()
	waitFor(t, 10*time.Second, "one pod in DNS after scaling to one", func() error {
		if got := dig(name, "A"); len(got) != 1 {
			return fmt.Errorf("A %s: %q", name, got)
		}
		return nil
	})
	t.Logf("scaled-down pod left DNS %v after the apply", time.Since(scaled).Round(100*time.Millisecond))
	s.mustBerth(t, "delete", "deploy", "web")
}
