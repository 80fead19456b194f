package proxy

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/google/nftables"
	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// The IPv6 addresses of TestDualStackInNetNS, from the benchmarking
// range 2001:2::/48 and only ever inside the namespaces it makes: the
// node's link 2001:2:0:1::1 to the client 2001:2:0:1::2, three endpoints on
// the node, and the IPv6 service CIDR 2001:2:0:43::/112.
const (
	nodeLink6 = "2001:2:0:1::1"
	client6   = "2001:2:0:1::2"
	vip6      = "2001:2:0:43::10"
)

var endpointIPs6 = []string{"2001:2::11", "2001:2::12", "2001:2::13"}

// dualStackSlices are a Service's EndpointSlices of each family, the
// i-th endpoint of each ready when ready[i].
func dualStackSlices(ready []bool) []*api.EndpointSlice {
	v4 := testSlice(nil)
	v6 := testSlice(nil)
	v6.Name, v6.AddressType = "web-v6", api.AddressTypeIPv6
	for i := range v4.Endpoints {
		r := i < len(ready) && ready[i]
		v4.Endpoints[i].Conditions = api.EndpointConditions{Ready: &r, Serving: &r}
		v6.Endpoints[i].Addresses = []string{endpointIPs6[i]}
		v6.Endpoints[i].Conditions = api.EndpointConditions{Ready: &r, Serving: &r}
	}
	return []*api.EndpointSlice{v4, v6}
}

func dualStackService(typ api.ServiceType) *api.Service {
	svc := testService(typ)
	pol := corev1.IPFamilyPolicyRequireDualStack
	svc.Spec.IPFamilyPolicy = &pol
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	svc.Spec.ClusterIPs = []string{vip, vip6}
	return svc
}

// buildBoth is the Rulesets of both families.
func buildBoth(in Input) []*Ruleset {
	in.Family = corev1.IPv4Protocol
	v4 := Build(in)
	in.Family = corev1.IPv6Protocol
	return []*Ruleset{v4, Build(in)}
}

// answers asks url from ns n times, each on a new connection, and
// counts the answers (each endpoint answers its own address).
func answers(t *testing.T, ns *netNS, url string, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for range n {
		body, err := get(ns, url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		host, _, _ := net.SplitHostPort(body)
		seen[host]++
	}
	return seen
}

// TestDualStackInNetNS: real nftables in namespaces the test makes, a
// dual-stack Service written into the ip and the ip6 table in one
// transaction. Its IPv6 ClusterIP balances over three IPv6 endpoints
// and its IPv4 one over the IPv4 endpoints; an endpoint turned unready
// leaves both; the node port answers on the node's IPv6 address from
// another namespace; ClientIP affinity holds over IPv6; the ip6 table
// deleted by hand is written whole again while the ip one changes
// incrementally; no endpoint refuses over IPv6 too; Cleanup removes both.
func TestDualStackInNetNS(t *testing.T) {
	testtool.NeedRoot(t, "network namespaces and nftables")
	if _, err := os.Stat("/proc/net/if_inet6"); err != nil {
		t.Skip("the kernel has no IPv6")
	}
	ip := testtool.Need(t, "ip")
	node := newNetNS(t, ip, "ds-node")
	client := newNetNS(t, ip, "ds-client")
	veth := fmt.Sprintf("bd%d", os.Getpid()%100000)
	run(t, ip, "link", "add", veth, "netns", node.name, "type", "veth", "peer", "name", "eth0", "netns", client.name)
	run(t, ip, "-n", node.name, "addr", "add", nodeLink+"/24", "dev", veth)
	run(t, ip, "-n", node.name, "addr", "add", nodeLink6+"/64", "dev", veth, "nodad")
	run(t, ip, "-n", node.name, "link", "set", veth, "up")
	run(t, ip, "-n", client.name, "addr", "add", client6+"/64", "dev", "eth0", "nodad")
	run(t, ip, "-n", client.name, "link", "set", "eth0", "up")
	run(t, ip, "-n", client.name, "-6", "route", "add", "default", "via", nodeLink6)
	for i := range endpointIPs {
		run(t, ip, "-n", node.name, "addr", "add", endpointIPs[i]+"/32", "dev", veth)
		run(t, ip, "-n", node.name, "addr", "add", endpointIPs6[i]+"/128", "dev", veth, "nodad")
		serveIn(t, node, endpointIPs[i]+":8080")
		serveIn(t, node, "["+endpointIPs6[i]+"]:8080")
	}
	run(t, ip, "-n", node.name, "route", "add", "198.19.0.0/16", "via", clientIP)
	run(t, ip, "-n", node.name, "-6", "route", "add", "2001:2:0:43::/112", "via", client6)

	s := NewSyncer(int(node.h))
	t.Cleanup(func() { s.Cleanup() })
	all := []bool{true, true, true}
	sync := func(wantFull bool, svc *api.Service, ready []bool) {
		t.Helper()
		full, err := s.Sync(buildBoth(Input{NodeName: "node-1", Services: []*api.Service{svc}, Slices: dualStackSlices(ready)})...)
		if err != nil {
			t.Fatal(err)
		}
		if full != wantFull {
			t.Fatalf("sync wrote a table whole: %v, want %v", full, wantFull)
		}
	}
	sync(true, dualStackService(api.ServiceTypeNodePort), all)
	url6 := "http://[" + vip6 + "]:80/"
	if seen := answers(t, node, url6, 60); len(seen) != 3 || seen[endpointIPs6[0]] == 0 {
		t.Fatalf("60 connections to the IPv6 ClusterIP reached %v, want the three IPv6 endpoints", seen)
	}
	if seen := answers(t, node, "http://"+vip+":80/", 30); len(seen) != 3 || seen[endpointIPs[0]] == 0 {
		t.Fatalf("30 connections to the IPv4 ClusterIP reached %v, want the three IPv4 endpoints", seen)
	}
	sync(false, dualStackService(api.ServiceTypeNodePort), []bool{true, true, false})
	if seen := answers(t, node, url6, 40); len(seen) != 2 || seen[endpointIPs6[2]] != 0 {
		t.Fatalf("after %s turned unready: %v", endpointIPs6[2], seen)
	}
	nodePort6 := "http://[" + nodeLink6 + "]:30080/"
	if seen := answers(t, client, nodePort6, 20); len(seen) != 2 || seen[endpointIPs6[2]] != 0 {
		t.Fatalf("the node port on the node's IPv6 address reached %v", seen)
	}
	sticky := dualStackService(api.ServiceTypeNodePort)
	sticky.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	api.Default(sticky)
	sync(false, sticky, all)
	if seen := answers(t, node, url6, 20); len(seen) != 1 {
		t.Fatalf("with ClientIP affinity over IPv6: %v", seen)
	}

	// The ip6 table deleted by hand: written whole again, the ip one
	// left as it was and changed in the same transaction.
	c, err := nftables.New(nftables.WithNetNSFd(int(node.h)))
	if err != nil {
		t.Fatal(err)
	}
	c.DelTable(&nftables.Table{Name: Table, Family: nftables.TableFamilyIPv6})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := get(node, url6); err == nil {
		t.Fatal("the IPv6 ClusterIP answers with its table gone")
	}
	sync(true, dualStackService(api.ServiceTypeNodePort), all)
	if seen := answers(t, node, url6, 30); len(seen) != 3 {
		t.Fatalf("after the rebuild: %v", seen)
	}
	sync(false, dualStackService(api.ServiceTypeNodePort), nil)
	if _, err := get(node, url6); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a service without endpoints over IPv6: %v, want connection refused", err)
	}
	if err := s.Cleanup(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
		if _, err := c.ListTableOfFamily(Table, f); err == nil {
			t.Fatalf("the table of family %v outlives Cleanup", f)
		}
	}
}
