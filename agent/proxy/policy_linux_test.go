package proxy

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/nftables"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// podInNode makes a network namespace for a pod at ip, routed through
// node over a veth of its own (as a CNI's point-to-point pod link): the
// node side holds gw, the first address of the pod's /24 (or /64 for an
// IPv6 pod).
func podInNode(t *testing.T, ip string, node *netNS, suffix, podIP, gw string) *netNS {
	t.Helper()
	pod := newNetNS(t, ip, suffix)
	veth := fmt.Sprintf("bq%d%s", os.Getpid()%10000, suffix)
	bits, flags, family := "/24", []string(nil), "-4"
	if strings.Contains(podIP, ":") {
		// No duplicate address detection: the address is usable at once.
		bits, flags, family = "/64", []string{"nodad"}, "-6"
	}
	run(t, ip, "link", "add", veth, "netns", node.name, "type", "veth", "peer", "name", "eth0", "netns", pod.name)
	run(t, ip, append([]string{"-n", node.name, "addr", "add", gw + bits, "dev", veth}, flags...)...)
	run(t, ip, "-n", node.name, "link", "set", veth, "up")
	run(t, ip, append([]string{"-n", pod.name, "addr", "add", podIP + bits, "dev", "eth0"}, flags...)...)
	run(t, ip, "-n", pod.name, "link", "set", "eth0", "up")
	run(t, ip, "-n", pod.name, family, "route", "add", "default", "via", gw)
	return pod
}

// policyNet is one address family's setting of the NetworkPolicy test:
// its pods' addresses and gateways, a wide ipBlock that holds them all,
// web's own subnet, and the nftables family its rules are written in.
type policyNet struct {
	family                 nftables.TableFamily
	webIP, frontIP, backIP string
	webGW, frontGW, backGW string
	wide, webNet, webHost  string
}

// TestNetworkPolicyInNetNS: real nftables in namespaces the test makes.
// Three pods on one node, in three Kubernetes namespaces: web (shop),
// a client in front and one in back. Both clients reach web until a
// policy selects it; then none does, until a policy lets front's pods
// in on web's named port; back's stays out. An egress policy then
// keeps front's client from web but to an ipBlock that excepts it, and
// lets it to web once the except is gone. Each change is one
// incremental transaction; the table's rules flushed by hand are
// written whole again; Cleanup leaves nothing. The same over IPv4 and,
// in the ip6 table, over IPv6.
func TestNetworkPolicyInNetNS(t *testing.T) {
	// The two share nothing (namespaces, links and tables of their own)
	// and mostly wait out blocked connections: they run side by side.
	t.Run("IPv4", func(t *testing.T) {
		t.Parallel()
		testNetworkPolicyInNetNS(t, "np", policyNet{
			family: nftables.TableFamilyIPv4,
			webIP:  "198.18.2.10", frontIP: "198.18.3.10", backIP: "198.18.4.10",
			webGW: "198.18.2.1", frontGW: "198.18.3.1", backGW: "198.18.4.1",
			wide: "198.18.0.0/15", webNet: "198.18.2.0/24", webHost: "198.18.2.10/32",
		})
	})
	t.Run("IPv6", func(t *testing.T) {
		t.Parallel()
		if _, err := os.Stat("/proc/net/if_inet6"); err != nil {
			t.Skip("the kernel has no IPv6")
		}
		// Addresses of the benchmarking range 2001:2::/48.
		testNetworkPolicyInNetNS(t, "np6", policyNet{
			family: nftables.TableFamilyIPv6,
			webIP:  "2001:2:0:12::10", frontIP: "2001:2:0:13::10", backIP: "2001:2:0:14::10",
			webGW: "2001:2:0:12::1", frontGW: "2001:2:0:13::1", backGW: "2001:2:0:14::1",
			wide: "2001:2::/48", webNet: "2001:2:0:12::/64", webHost: "2001:2:0:12::10/128",
		})
	})
}

func testNetworkPolicyInNetNS(t *testing.T, prefix string, pn policyNet) {
	testtool.NeedRoot(t, "network namespaces and nftables")
	ip := testtool.Need(t, "ip")
	node := newNetNS(t, ip, prefix+"node")
	run(t, ip, "netns", "exec", node.name, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	run(t, ip, "netns", "exec", node.name, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
	web := podInNode(t, ip, node, prefix+"w", pn.webIP, pn.webGW)
	front := podInNode(t, ip, node, prefix+"f", pn.frontIP, pn.frontGW)
	back := podInNode(t, ip, node, prefix+"b", pn.backIP, pn.backGW)
	serveIn(t, web, net.JoinHostPort(pn.webIP, "8080"))
	serveIn(t, web, net.JoinHostPort(pn.webIP, "9090"))

	http := api.ContainerPort{Name: "http", ContainerPort: 8080}
	pods := []*api.Pod{
		policyPodOf("shop", "web", "node-1", pn.webIP, map[string]string{"app": "web"}, http),
		policyPodOf("front", "client", "node-1", pn.frontIP, map[string]string{"role": "client"}),
		policyPodOf("back", "client", "node-1", pn.backIP, map[string]string{"role": "client"}),
	}
	namespaces := []*api.Namespace{nsOf("shop", nil), nsOf("front", map[string]string{"team": "frontend"}), nsOf("back", nil)}
	s := NewSyncer(int(node.h))
	t.Cleanup(func() { s.Cleanup() })
	// Both families' tables, as the agent syncs them.
	sync := func(wantFull bool, policies ...*api.NetworkPolicy) {
		t.Helper()
		full, err := s.Sync(buildBoth(Input{NodeName: "node-1", Pods: pods, Namespaces: namespaces, Policies: policies})...)
		if err != nil {
			t.Fatal(err)
		}
		if full != wantFull {
			t.Fatalf("sync wrote a table whole: %v, want %v", full, wantFull)
		}
	}
	reach := func(from *netNS, port int, want bool) {
		t.Helper()
		addr := net.JoinHostPort(pn.webIP, strconv.Itoa(port))
		url := "http://" + addr + "/"
		body, err := get(from, url)
		switch {
		case want && err != nil:
			t.Fatalf("from %s, %s: %v, want an answer", from.name, url, err)
		case want && body != addr:
			t.Fatalf("from %s, %s answered %q", from.name, url, body)
		case !want && err == nil:
			t.Fatalf("from %s, %s answered %q, want it blocked", from.name, url, body)
		}
	}

	sync(true)
	reach(front, 8080, true)
	reach(back, 8080, true)

	// A policy selects web and allows nothing in.
	deny := policyOf("shop", "deny", nil, nil)
	sync(false, deny)
	reach(front, 8080, false)
	reach(back, 8080, false)

	// Front's pods may come in on web's "http" port, and on no other.
	fromFront := policyOf("shop", "from-front", map[string]string{"app": "web"}, func(s *networkingv1.NetworkPolicySpec) {
		s.Ingress = []networkingv1.NetworkPolicyIngressRule{{
			From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "frontend"}}}},
			Ports: []networkingv1.NetworkPolicyPort{portOf(intstr.FromString("http"), corev1.ProtocolTCP)},
		}}
	})
	sync(false, deny, fromFront)
	reach(front, 8080, true)
	reach(front, 9090, false)
	reach(back, 8080, false)

	// Front's client may open connections to the wide block but web's
	// subnet (a block of the other family beside it changes nothing
	// here): it no longer reaches web, which would let it in.
	other := "2001:2::/48"
	if pn.family == nftables.TableFamilyIPv6 {
		other = "198.18.0.0/15"
	}
	egress := policyOf("front", "out", nil, func(s *networkingv1.NetworkPolicySpec) {
		s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
		s.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: pn.wide, Except: []string{pn.webNet}}},
			{IPBlock: &networkingv1.IPBlock{CIDR: other}},
		}}}
	})
	sync(false, deny, fromFront, egress)
	reach(front, 8080, false)
	// The except made smaller: web's address alone is left out, still.
	egress.Spec.Egress[0].To[0].IPBlock.Except = []string{pn.webHost}
	sync(false, deny, fromFront, egress)
	reach(front, 8080, false)
	// The except gone: the block holds web, and front reaches it.
	egress.Spec.Egress[0].To[0].IPBlock.Except = nil
	sync(false, deny, fromFront, egress)
	reach(front, 8080, true)
	// And the egress policy gone: front reaches web, on its http port only.
	sync(false, deny, fromFront)
	reach(front, 8080, true)
	reach(front, 9090, false)

	// The table's rules flushed by hand (nft flush table ip berth-proxy,
	// or ip6): everything passes until the next sync writes it whole.
	c, err := nftables.New(nftables.WithNetNSFd(int(node.h)))
	if err != nil {
		t.Fatal(err)
	}
	c.FlushTable(&nftables.Table{Name: Table, Family: pn.family})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	reach(back, 8080, true)
	sync(true, deny, fromFront)
	reach(back, 8080, false)
	reach(front, 8080, true)

	// Policies gone: open again.
	sync(false)
	reach(back, 8080, true)
	reach(back, 9090, true)

	if err := s.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTableOfFamily(Table, pn.family); err == nil {
		t.Fatal("the table outlives Cleanup")
	}
}
