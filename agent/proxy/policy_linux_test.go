package proxy

import (
	"fmt"
	"os"
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
// node side holds gw, the first address of the pod's /24.
func podInNode(t *testing.T, ip string, node *netNS, suffix, podIP, gw string) *netNS {
	t.Helper()
	pod := newNetNS(t, ip, suffix)
	veth := fmt.Sprintf("bq%d%s", os.Getpid()%10000, suffix)
	run(t, ip, "link", "add", veth, "netns", node.name, "type", "veth", "peer", "name", "eth0", "netns", pod.name)
	run(t, ip, "-n", node.name, "addr", "add", gw+"/24", "dev", veth)
	run(t, ip, "-n", node.name, "link", "set", veth, "up")
	run(t, ip, "-n", pod.name, "addr", "add", podIP+"/24", "dev", "eth0")
	run(t, ip, "-n", pod.name, "link", "set", "eth0", "up")
	run(t, ip, "-n", pod.name, "route", "add", "default", "via", gw)
	return pod
}

// TestNetworkPolicyInNetNS: real nftables in namespaces the test makes.
// Three pods on one node, in three Kubernetes namespaces: web (shop),
// a client in front and one in back. Both clients reach web until a
// policy selects it; then none does, until a policy lets front's pods
// in on web's named port; back's stays out. An egress policy then
// keeps front's client from web but to an ipBlock that excepts it.
// Each change is one incremental transaction; the table's rules
// flushed by hand are written whole again; Cleanup leaves nothing.
func TestNetworkPolicyInNetNS(t *testing.T) {
	testtool.NeedRoot(t, "network namespaces and nftables")
	ip := testtool.Need(t, "ip")
	node := newNetNS(t, ip, "npnode")
	run(t, ip, "netns", "exec", node.name, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	const webIP, frontIP, backIP = "198.18.2.10", "198.18.3.10", "198.18.4.10"
	web := podInNode(t, ip, node, "w", webIP, "198.18.2.1")
	front := podInNode(t, ip, node, "f", frontIP, "198.18.3.1")
	back := podInNode(t, ip, node, "b", backIP, "198.18.4.1")
	serveIn(t, web, webIP+":8080")
	serveIn(t, web, webIP+":9090")

	http := api.ContainerPort{Name: "http", ContainerPort: 8080}
	pods := []*api.Pod{
		policyPodOf("shop", "web", "node-1", webIP, map[string]string{"app": "web"}, http),
		policyPodOf("front", "client", "node-1", frontIP, map[string]string{"role": "client"}),
		policyPodOf("back", "client", "node-1", backIP, map[string]string{"role": "client"}),
	}
	namespaces := []*api.Namespace{nsOf("shop", nil), nsOf("front", map[string]string{"team": "frontend"}), nsOf("back", nil)}
	s := NewSyncer(int(node.h))
	t.Cleanup(func() { s.Cleanup() })
	sync := func(wantFull bool, policies ...*api.NetworkPolicy) {
		t.Helper()
		full, err := s.Sync(Build(Input{NodeName: "node-1", Pods: pods, Namespaces: namespaces, Policies: policies}))
		if err != nil {
			t.Fatal(err)
		}
		if full != wantFull {
			t.Fatalf("sync wrote the table whole: %v, want %v", full, wantFull)
		}
	}
	reach := func(from *netNS, port int, want bool) {
		t.Helper()
		url := fmt.Sprintf("http://%s:%d/", webIP, port)
		body, err := get(from, url)
		switch {
		case want && err != nil:
			t.Fatalf("from %s, %s: %v, want an answer", from.name, url, err)
		case want && !strings.HasPrefix(body, webIP):
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

	// Front's client may open connections to 198.18.0.0/15 but web's
	// /24: it no longer reaches web, which would let it in.
	egress := policyOf("front", "out", nil, func(s *networkingv1.NetworkPolicySpec) {
		s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
		s.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{
			CIDR: "198.18.0.0/15", Except: []string{"198.18.2.0/24"}}}}}}
	})
	sync(false, deny, fromFront, egress)
	reach(front, 8080, false)
	// The except made smaller: web's address alone is left out, still.
	egress.Spec.Egress[0].To[0].IPBlock.Except = []string{webIP + "/32"}
	sync(false, deny, fromFront, egress)
	reach(front, 8080, false)
	// And gone: front reaches web again, on its http port only.
	sync(false, deny, fromFront)
	reach(front, 8080, true)

	// The table's rules flushed by hand (nft flush table ip berth-proxy):
	// everything passes until the next sync writes the table whole.
	c, err := nftables.New(nftables.WithNetNSFd(int(node.h)))
	if err != nil {
		t.Fatal(err)
	}
	c.FlushTable(&nftables.Table{Name: Table, Family: nftables.TableFamilyIPv4})
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
	if _, err := c.ListTableOfFamily(Table, nftables.TableFamilyIPv4); err == nil {
		t.Fatal("the table outlives Cleanup")
	}
}
