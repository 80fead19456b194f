package e2e

import (
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/testtool"
)

// The addresses of TestContainerdTwoNodes, all inside 198.18.0.0/15 and
// only ever in the namespaces the test makes: the nodes' LAN, the
// cluster CIDR the nodes' podCIDRs come from, and the Services'.
const (
	lanGateway       = "198.18.0.1" // the test's namespace: server and registry
	lanBits          = 24
	twoNodeCluster   = "198.19.0.0/16"
	twoNodeServices  = "198.18.64.0/24"
	agentStreamsPort = 10250
)

// lanNode makes a network namespace for a node at ip, joined by a veth to
// the bridge lan0 of the test's namespace (made by the first call), and
// returns the namespace's path.
func lanNode(t *testing.T, name, ip string) string {
	t.Helper()
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if exec.Command("ip", "link", "show", "lan0").Run() != nil {
		sh("link", "add", "lan0", "type", "bridge")
		sh("addr", "add", fmt.Sprintf("%s/%d", lanGateway, lanBits), "dev", "lan0")
		sh("link", "set", "lan0", "up")
	}
	sh("netns", "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	sh("link", "add", "v-"+name, "type", "veth", "peer", "name", "eth0", "netns", name)
	sh("link", "set", "v-"+name, "master", "lan0", "up")
	sh("-n", name, "link", "set", "lo", "up")
	sh("-n", name, "addr", "add", fmt.Sprintf("%s/%d", ip, lanBits), "dev", "eth0")
	sh("-n", name, "link", "set", "eth0", "up")
	return "/run/netns/" + name
}

// startAgentIn runs `berth agent --runtime containerd` in the network
// namespace netns as node name at ip, joined to s, pulling from reg.
func startAgentIn(t *testing.T, s *server, netns, name, ip string, reg *critest.Registry, pause string) {
	t.Helper()
	dataDir := critest.TempDir(t)
	cdDir := filepath.Join(dataDir, "containerd")
	critest.CleanUpAfter(t, cdDir)
	reg.WriteHosts(t, filepath.Join(cdDir, "certs.d"))
	startProgram(t, "nsenter", "--net="+netns, bin, "agent", "--server", s.url,
		"--token-file", filepath.Join(s.dataDir, "node-token"),
		"--ca-file", filepath.Join(s.dataDir, "tls", "ca.crt"),
		"--node-name", name, "--node-ip", ip,
		"--listen", fmt.Sprintf("%s:%d", ip, agentStreamsPort),
		"--data-dir", dataDir,
		"--runtime", "containerd", "--pause-image", pause,
		"--cluster-dns", fmt.Sprintf("%s:%d", lanGateway, s.dnsPort),
		"--node-status-update-frequency", "1s")
}

// TestContainerdTwoNodes runs a server in the test's network namespace
// and two `berth agent --runtime containerd`, each in a network namespace
// of its own on one LAN with it, as two machines: each node gets a
// podCIDR of the cluster CIDR and routes the other's via its address
// (host-gw); a pod on either node reaches the pod on the other at its pod
// IP, and a pod on one reaches a Service whose pod runs on the other by
// its short DNS name, through the node-local DNS and the service proxy.
func TestContainerdTwoNodes(t *testing.T) {
	testtool.Need(t, "kubectl")
	testtool.Need(t, "nsenter")
	critest.Need(t)
	if !critest.InNetns(t) {
		return
	}
	nodes := []struct{ name, ip, netns string }{{name: "node-a", ip: "198.18.0.2"}, {name: "node-b", ip: "198.18.0.3"}}
	for i := range nodes {
		nodes[i].netns = lanNode(t, nodes[i].name, nodes[i].ip)
	}
	reg := critest.StartRegistryOn(t, lanGateway)
	pause := reg.Push(t, "pause:test", critest.PauseImage(t))
	// The web image's /cgi-bin/addr answers with the client's address
	// (httpd's dual-stack socket gives it as [::ffff:IPv4]).
	addr := `#!/bin/sh
a=${REMOTE_ADDR#"[::ffff:"}
printf 'Content-Type: text/plain\r\n\r\n%s\n' "${a%]}"
`
	web := reg.Push(t, "web:1", critest.BusyboxImage(t, critest.ImageConfig{
		Entrypoint: []string{"/bin/sh", "-c", `exec httpd -f -p "$0" -h /www`},
		Cmd:        []string{"80"},
		Files:      map[string][]byte{"/www/cgi-bin/addr": []byte(addr)},
	}))

	dnsPort := freePort(t, lanGateway)
	s := startServer(t, "--listen", fmt.Sprintf("%s:%d", lanGateway, freePort(t, lanGateway)),
		"--dns-listen", fmt.Sprintf("%s:%d", lanGateway, dnsPort),
		"--cluster-cidr", twoNodeCluster, "--service-cidr", twoNodeServices)
	s.dnsPort = dnsPort
	for _, n := range nodes {
		startAgentIn(t, s, n.netns, n.name, n.ip, reg, pause)
	}
	cidrs := map[string]string{}
	for _, n := range nodes {
		waitNodeReady(t, s, n.name, "True")
		cidr := s.kubectl(t, "get", "node", n.name, "-o", "jsonpath={.spec.podCIDR}")
		p, err := netip.ParsePrefix(cidr)
		if err != nil || !netip.MustParsePrefix(twoNodeCluster).Overlaps(p) {
			t.Fatalf("node %s: podCIDR %q, want one of %s", n.name, cidr, twoNodeCluster)
		}
		cidrs[n.name] = cidr
	}
	if cidrs["node-a"] == cidrs["node-b"] {
		t.Fatalf("both nodes hold %s", cidrs["node-a"])
	}
	// host-gw: each node routes the other's podCIDR via its address.
	for i, n := range nodes {
		other := nodes[1-i]
		waitFor(t, 30*time.Second, n.name+"'s route to "+other.name+"'s pods", func() error {
			out, err := exec.Command("ip", "-n", filepath.Base(n.netns), "route", "show", "proto", "157").CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			if want := cidrs[other.name] + " via " + other.ip + " dev eth0"; !strings.Contains(string(out), want) {
				return fmt.Errorf("routes %q, want %q", out, want)
			}
			return nil
		})
	}

	var manifest strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&manifest, `apiVersion: v1
kind: Pod
metadata:
  name: web-%[1]s
  labels: {app: web-%[1]s}
spec:
  nodeName: %[2]s
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: %[3]s
    args: ["8080"]
    ports:
    - {name: http, containerPort: 8080}
    readinessProbe:
      httpGet: {path: /index.html, port: http}
      periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web-%[1]s
spec:
  selector: {app: web-%[1]s}
  ports:
  - {port: 80, targetPort: http}
---
`, strings.TrimPrefix(n.name, "node-"), n.name, web)
	}
	s.applyText(t, manifest.String())
	t.Cleanup(func() {
		// The agents remove the sandboxes while they run.
		s.kubectlErr(t, "delete", "pod", "web-a", "web-b", "--wait=true", "--timeout=60s")
	})
	s.kubectl(t, "wait", "--for=condition=Ready", "pod/web-a", "pod/web-b", "--timeout=180s")
	ips := map[string]string{}
	for _, n := range nodes {
		pod := "web-" + strings.TrimPrefix(n.name, "node-")
		out := s.kubectl(t, "get", "pod", pod, "-o", "jsonpath={.status.podIP} {.spec.nodeName} {.status.hostIP}")
		f := strings.Fields(out)
		if len(f) != 3 || !netip.MustParsePrefix(cidrs[n.name]).Contains(netip.MustParseAddr(f[0])) || f[1] != n.name || f[2] != n.ip {
			t.Fatalf("pod %s: %q, want an address of %s on %s (%s)", pod, out, cidrs[n.name], n.name, n.ip)
		}
		ips[pod] = f[0]
	}

	// Each pod reaches the other, on the other node, at its pod IP; each
	// finds the other's Service by name (the short one through the search
	// path) on the node-local DNS of its own node's pod gateway, and
	// reaches it at its virtual IP (the service proxy's rules on its node).
	// Busybox's nslookup has a resolver of its own; its wget and a static
	// glibc's lookups do not work in a bare image, so HTTP goes by nc.
	for _, c := range []struct{ from, to, name string }{
		{"web-a", "web-b", "web-b"},
		{"web-b", "web-a", "web-a.default.svc.cluster.local"},
	} {
		get(t, s, c.from, ips[c.to], 8080, "/index.html", "hello from an image\n")
		var vip string
		waitFor(t, 60*time.Second, c.from+" resolving "+c.name, func() error {
			// Busybox's nslookup asks every search domain of a short
			// name, and exits 1 for those that have none: the answer
			// is what counts.
			out, err := s.kubectlErr(t, "exec", c.from, "--", "nslookup", c.name)
			_, answer, ok := strings.Cut(out, "Name:")
			if !ok || !strings.HasPrefix(strings.TrimSpace(answer), c.to+".default.svc.cluster.local\n") {
				return fmt.Errorf("no answer for %s: %q, %v", c.name, out, err)
			}
			_, addr, _ := strings.Cut(answer, "Address:")
			vip = strings.TrimSpace(strings.SplitN(strings.TrimSpace(addr), "\n", 2)[0])
			return nil
		})
		if p, err := netip.ParseAddr(vip); err != nil || !netip.MustParsePrefix(twoNodeServices).Contains(p) {
			t.Fatalf("%s: %s resolves to %q, want a virtual IP of %s", c.from, c.name, vip, twoNodeServices)
		}
		get(t, s, c.from, vip, 80, "/index.html", "hello from an image\n")
	}
	// The pod on B sees the pod on A come from A's pod IP: nothing is
	// masqueraded between pods.
	get(t, s, "web-a", ips["web-b"], 8080, "/cgi-bin/addr", ips["web-a"]+"\n")
}

// get asks for path of addr:port from inside pod, with nc, until it
// answers 200 with body.
func get(t *testing.T, s *server, pod, addr string, port int, path, body string) {
	t.Helper()
	waitFor(t, 60*time.Second, fmt.Sprintf("%s reaching %s:%d%s", pod, addr, port, path), func() error {
		out, err := s.kubectlErr(t, "exec", pod, "--", "sh", "-c",
			fmt.Sprintf(`printf 'GET %s HTTP/1.0\r\n\r\n' | nc -w 5 %s %d`, path, addr, port))
		if err != nil || !strings.HasPrefix(out, "HTTP/1.") || !strings.Contains(out, " 200 OK\r\n") || !strings.HasSuffix(out, "\r\n\r\n"+body) {
			return fmt.Errorf("%q, %v", out, err)
		}
		return nil
	})
}
