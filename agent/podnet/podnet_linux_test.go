package podnet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	mdns "github.com/miekg/dns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/testtool"
)

// The test's addresses: the nodes' link in 198.18.0.0/24, the cluster
// CIDR 198.19.0.0/16; both inside 198.18.0.0/15 and only ever inside the
// namespaces the test makes.
const (
	testClusterCIDR = "198.19.0.0/16"
	nodeAIP         = "198.18.0.1"
	nodeBIP         = "198.18.0.2"
)

// netNS is a network namespace the test made with `ip netns add`.
type netNS struct {
	name string
	h    netns.NsHandle
}

func newNetNS(t *testing.T, ip, suffix string) *netNS {
	t.Helper()
	name := fmt.Sprintf("berth-podnet-%d-%s", os.Getpid(), suffix)
	run(t, ip, "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command(ip, "netns", "del", name).Run() })
	h, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	run(t, ip, "-n", name, "link", "set", "lo", "up")
	return &netNS{name: name, h: h}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// podNet gives node ns a pod bridge berth0 holding the gateway of podCIDR,
// as the CNI bridge plugin makes it, and one pod: a namespace of its own
// on that bridge, at podIP, routed through the gateway.
func podNet(t *testing.T, ip string, node *netNS, suffix, podCIDR, podIP string) *netNS {
	t.Helper()
	gw, err := Gateway(podCIDR)
	if err != nil {
		t.Fatal(err)
	}
	bits := netip.MustParsePrefix(podCIDR).Bits()
	pod := newNetNS(t, ip, suffix)
	run(t, ip, "-n", node.name, "link", "add", "berth0", "type", "bridge")
	run(t, ip, "-n", node.name, "addr", "add", fmt.Sprintf("%s/%d", gw, bits), "dev", "berth0")
	run(t, ip, "-n", node.name, "link", "set", "berth0", "up")
	run(t, ip, "-n", node.name, "link", "add", "veth-"+suffix, "type", "veth", "peer", "name", "eth0", "netns", pod.name)
	run(t, ip, "-n", node.name, "link", "set", "veth-"+suffix, "master", "berth0", "up")
	run(t, ip, "-n", pod.name, "addr", "add", fmt.Sprintf("%s/%d", podIP, bits), "dev", "eth0")
	run(t, ip, "-n", pod.name, "link", "set", "eth0", "up")
	run(t, ip, "-n", pod.name, "route", "add", "default", "via", gw.String())
	return pod
}

// routesIn lists the routes of ns's main table to dst, of any protocol.
func routesIn(t *testing.T, ns *netNS) []netlink.Route {
	t.Helper()
	h, err := netlink.NewHandleAt(ns.h)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	routes, err := h.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	return routes
}

func hasRoute(routes []netlink.Route, dst, via string, proto netlink.RouteProtocol) bool {
	return slices.ContainsFunc(routes, func(r netlink.Route) bool {
		return r.Dst != nil && r.Dst.String() == dst && r.Gw.String() == via && r.Protocol == proto
	})
}

// TestTwoNodesReachEachOthersPods joins two nodes, each a network
// namespace on one veth link, through a real control plane: the node IPAM
// controller gives them podCIDRs, each node's Manager routes the other's
// via its InternalIP and turns forwarding on, so that a process on node A
// reaches a pod on node B at its pod IP; a pod on B resolves a Service
// name (with nslookup, and its short name through a pod's search path)
// through the node-local forwarder on its gateway, which asks the control
// plane's DNS server; a node that goes takes its route along, and
// routes berth did not make are left alone.
func TestTwoNodesReachEachOthersPods(t *testing.T) {
	testtool.NeedRoot(t, "make network namespaces")
	ip := testtool.Need(t, "ip")
	nslookup := testtool.Need(t, "nslookup")
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	a, b := newNetNS(t, ip, "a"), newNetNS(t, ip, "b")
	run(t, ip, "-n", a.name, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", b.name)
	for _, n := range []struct {
		ns   *netNS
		addr string
	}{{a, nodeAIP}, {b, nodeBIP}} {
		run(t, ip, "-n", n.ns.name, "addr", "add", n.addr+"/24", "dev", "eth0")
		run(t, ip, "-n", n.ns.name, "link", "set", "eth0", "up")
	}
	// A route of someone else's, which the Manager must leave alone.
	run(t, ip, "-n", a.name, "route", "add", "198.19.200.0/24", "via", nodeBIP, "proto", "static")

	dnsAddr := freeUDPPort(t)
	cp := cptest.Start(t, controlplane.Config{ClusterCIDR: testClusterCIDR, NodeCIDRMaskSize: 24,
		DNS: &controlplane.DNSConfig{Listen: dnsAddr, Upstream: "none"}})
	admin := adminClient(t, cp)
	ctx := context.Background()
	for _, n := range []struct{ name, ip string }{{"node-a", nodeAIP}, {"node-b", nodeBIP}} {
		if _, err := admin.Create(ctx, &api.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}}); err != nil {
			t.Fatal(err)
		}
		// The node IPAM controller writes the Node too: read again on a
		// conflict.
		testtool.WaitFor(t, 10*time.Second, "node "+n.name+"'s address", func() error {
			obj, err := admin.Get(ctx, nodeKind, "", n.name)
			if err != nil {
				return err
			}
			node := obj.(*api.Node).DeepCopy()
			node.Status.Addresses = []api.NodeAddress{{Type: api.NodeInternalIP, Address: n.ip}}
			_, err = admin.UpdateStatus(ctx, node)
			return err
		})
	}
	cidrA, cidrB := waitPodCIDR(t, admin, "node-a"), waitPodCIDR(t, admin, "node-b")
	if cidrA == cidrB {
		t.Fatalf("both nodes hold %s", cidrA)
	}
	podIPB := netip.MustParsePrefix(cidrB).Addr().Next().Next().Next().Next().Next() // .5
	podIPA := netip.MustParsePrefix(cidrA).Addr().Next().Next().String()             // .2
	podNS := map[string]*netNS{"pa": podNet(t, ip, a, "pa", cidrA, podIPA)}
	podB := podNet(t, ip, b, "pb", cidrB, podIPB.String())

	// The Service the pod on B looks up, with its endpoint the pod itself:
	// headless, so that its name answers with the pod's address (a
	// ClusterIP needs the service proxy, which this test does not run).
	if _, err := admin.Create(ctx, &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"},
		Spec: api.ServiceSpec{ClusterIP: api.ClusterIPNone, Ports: []api.ServicePort{{Port: 8080}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Create(ctx, &api.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"},
		Subsets: []api.EndpointSubset{{Addresses: []api.EndpointAddress{{IP: podIPB.String()}}, Ports: []api.EndpointPort{{Port: 8080}}}}}); err != nil {
		t.Fatal(err)
	}

	mgrs := map[string]*Manager{}
	for name, ns := range map[string]*netNS{"node-a": a, "node-b": b} {
		m, err := NewManager(Options{Client: admin, NodeName: name, ClusterDNS: dnsAddr, NetNS: &ns.h, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		mgrs[name] = m
		testtool.Run(t, "pod network of "+name, m.Run)
	}

	testtool.WaitFor(t, 10*time.Second, "each node's route to the other's pods", func() error {
		if !hasRoute(routesIn(t, a), cidrB, nodeBIP, RouteProtocol) {
			return fmt.Errorf("node A: no route to %s via %s: %v", cidrB, nodeBIP, routesIn(t, a))
		}
		if !hasRoute(routesIn(t, b), cidrA, nodeAIP, RouteProtocol) {
			return fmt.Errorf("node B: no route to %s via %s: %v", cidrA, nodeAIP, routesIn(t, b))
		}
		return nil
	})
	if got := readIn(t, b, "/proc/sys/net/ipv4/ip_forward"); got != "1" {
		t.Errorf("node B: ip_forward %q, want 1", got)
	}

	// A process on node A reaches the pod on node B at its pod IP, and
	// the pod sees node A's own address; the pod on B reaches the pod on
	// A with its own pod IP; node A's own address, outside every podCIDR,
	// sees the pod on B come from node B's (the masquerade).
	for _, c := range []struct {
		from, to *netNS
		addr     string
		wantFrom string
	}{
		{a, podB, net.JoinHostPort(podIPB.String(), "8080"), nodeAIP},
		{podB, podNS["pa"], net.JoinHostPort(podIPA, "8081"), podIPB.String()},
		{podB, a, net.JoinHostPort(nodeAIP, "8082"), nodeBIP},
	} {
		if got := connectFrom(t, c.from, c.to, c.addr); got != c.wantFrom {
			t.Errorf("%s reached %s from %s, want %s", c.from.name, c.addr, got, c.wantFrom)
		}
	}

	// The pod on B resolves the Service through its gateway, over UDP and
	// TCP.
	gwB, _ := Gateway(cidrB)
	for _, network := range []string{"udp", "tcp"} {
		testtool.WaitFor(t, 10*time.Second, "an answer over "+network+" from the node-local DNS", func() error {
			q := new(mdns.Msg)
			q.SetQuestion("hello.default.svc.cluster.local.", mdns.TypeA)
			var resp *mdns.Msg
			if err := inNetNS(&podB.h, func() (err error) {
				resp, _, err = (&mdns.Client{Net: network, Timeout: 2 * time.Second}).Exchange(q, net.JoinHostPort(gwB.String(), "53"))
				return err
			}); err != nil {
				return err
			}
			if resp.Rcode != mdns.RcodeSuccess || len(resp.Answer) != 1 {
				return fmt.Errorf("answer %v", resp)
			}
			if got := resp.Answer[0].(*mdns.A).A.String(); got != podIPB.String() {
				return fmt.Errorf("A %s, want %s", got, podIPB)
			}
			return nil
		})
	}

	// nslookup in the pod, with the resolv.conf a pod of the namespace
	// default gets (ip netns exec mounts /etc/netns/NAME/ over /etc),
	// answers for the Service's short name through the search path.
	etc := "/etc/netns/" + podB.name
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(etc) })
	resolv := fmt.Sprintf("nameserver %s\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n", gwB)
	if err := os.WriteFile(etc+"/resolv.conf", []byte(resolv), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hello", "hello.default.svc.cluster.local"} {
		out, err := exec.Command(ip, "netns", "exec", podB.name, nslookup, name).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "hello.default.svc.cluster.local") || !strings.Contains(string(out), "Address: "+podIPB.String()) {
			t.Errorf("nslookup %s in the pod on B: %v\n%s", name, err, out)
		}
	}

	// Node B goes: node A's route to it goes too, and only that one.
	if _, err := admin.Delete(ctx, nodeKind, "", "node-b", nil); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "node A's route to node B's pods to go", func() error {
		if hasRoute(routesIn(t, a), cidrB, nodeBIP, RouteProtocol) {
			return fmt.Errorf("still routed")
		}
		return nil
	})
	if !hasRoute(routesIn(t, a), "198.19.200.0/24", nodeBIP, netlink.RouteProtocol(4)) {
		t.Errorf("node A: the static route was touched: %v", routesIn(t, a))
	}
	// Cleanup removes berth's routes, and only those.
	if err := mgrs["node-b"].Cleanup(); err != nil {
		t.Fatal(err)
	}
	if hasRoute(routesIn(t, b), cidrA, nodeAIP, RouteProtocol) {
		t.Errorf("node B: berth's route outlived Cleanup")
	}
	nft, err := nftables.New(nftables.WithNetNSFd(int(b.h)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nft.ListTableOfFamily(MasqTable, nftables.TableFamilyIPv4); err == nil {
		t.Errorf("node B: table %s outlived Cleanup", MasqTable)
	}
}

// connectFrom opens a TCP connection from namespace from to addr, where a
// listener in namespace to accepts it and says hello, and returns the
// address the listener saw it come from.
func connectFrom(t *testing.T, from, to *netNS, addr string) string {
	t.Helper()
	l := listenIn(t, to, addr)
	seen := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			seen <- err.Error()
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "hello\n")
		seen <- c.RemoteAddr().(*net.TCPAddr).IP.String()
	}()
	var conn net.Conn
	if err := inNetNS(&from.h, func() (err error) {
		conn, err = (&net.Dialer{Timeout: 5 * time.Second}).Dial("tcp", addr)
		return err
	}); err != nil {
		t.Fatalf("%s dials %s: %v", from.name, addr, err)
	}
	defer conn.Close()
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "hello\n" {
		t.Fatalf("%s read %q, %v from %s", from.name, line, err, addr)
	}
	return <-seen
}

func freeUDPPort(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

func adminClient(t *testing.T, cp *controlplane.Server) *client.Client {
	t.Helper()
	cfg, err := client.LoadKubeconfig(cp.Credentials().Paths.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 10*time.Second, "the API server", func() error {
		_, err := c.Get(context.Background(), api.KindOf(&api.Namespace{}), "", "default")
		return err
	})
	return c
}

func waitPodCIDR(t *testing.T, c *client.Client, name string) string {
	t.Helper()
	var cidr string
	testtool.WaitFor(t, 10*time.Second, "node "+name+"'s podCIDR", func() error {
		obj, err := c.Get(context.Background(), nodeKind, "", name)
		if err != nil {
			return err
		}
		if cidr = obj.(*api.Node).Spec.PodCIDR; cidr == "" {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	return cidr
}

func listenIn(t *testing.T, ns *netNS, addr string) net.Listener {
	t.Helper()
	var l net.Listener
	if err := inNetNS(&ns.h, func() (err error) {
		l, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func readIn(t *testing.T, ns *netNS, path string) string {
	t.Helper()
	var b []byte
	if err := inNetNS(&ns.h, func() (err error) {
		b, err = os.ReadFile(path)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestManagerTakesTheAgentsPodCIDR syncs a node whose Node has no
// spec.podCIDR but whose agent was given one (--pod-cidr): forwarding,
// the masquerade and the DNS forwarder follow that range.
func TestManagerTakesTheAgentsPodCIDR(t *testing.T) {
	testtool.NeedRoot(t, "make network namespaces")
	ip := testtool.Need(t, "ip")
	ns := newNetNS(t, ip, "own")
	c, err := client.New(&client.Config{Server: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Options{Client: c, NodeName: "n", PodCIDR: "198.19.9.0/24", ClusterDNS: closedPort(t), NetNS: &ns.h, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Cleanup() })
	if err := m.Sync([]*api.Node{node("n", "", nodeAIP)}); err != nil {
		t.Fatal(err)
	}
	if got := readIn(t, ns, "/proc/sys/net/ipv4/ip_forward"); got != "1" {
		t.Errorf("ip_forward %q, want 1", got)
	}
	nft, err := nftables.New(nftables.WithNetNSFd(int(ns.h)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nft.ListTableOfFamily(MasqTable, nftables.TableFamilyIPv4); err != nil {
		t.Errorf("table %s: %v", MasqTable, err)
	}
	// The forwarder is bound to the gateway (free-bound: no interface
	// holds it here); it answers SERVFAIL, its upstream being down.
	run(t, ip, "-n", ns.name, "addr", "add", "198.19.9.1/24", "dev", "lo")
	q := new(mdns.Msg)
	q.SetQuestion("hello.default.svc.cluster.local.", mdns.TypeA)
	var r *mdns.Msg
	if err := inNetNS(&ns.h, func() (err error) {
		r, _, err = (&mdns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(q, "198.19.9.1:53")
		return err
	}); err != nil || r.Rcode != mdns.RcodeServerFailure {
		t.Fatalf("the forwarder on 198.19.9.1:53: %v, %v", r, err)
	}
}
