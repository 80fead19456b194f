package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// The test's addresses, all inside 198.18.0.0/15 and only ever inside
// the namespaces it makes: the node 198.18.0.1 with three endpoints, a
// client reaching it over a veth (198.18.1.0/24), and
// the service CIDR 198.19.0.0/16.
const (
	nodeIP   = "198.18.0.1"
	nodeLink = "198.18.1.1"
	clientIP = "198.18.1.2"
	vip      = "198.19.0.10"
)

var endpointIPs = []string{"198.18.0.11", "198.18.0.12", "198.18.0.13"}

type netNS struct {
	name string
	h    netns.NsHandle
}

func newNetNS(t testing.TB, ip, suffix string) *netNS {
	t.Helper()
	name := fmt.Sprintf("berth-proxy-%d-%s", os.Getpid(), suffix)
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

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// inNetNS runs fn on a thread in ns: sockets belong to the namespace of
// the thread that makes them.
func inNetNS(ns *netNS, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	if err := netns.Set(ns.h); err != nil {
		return err
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		runtime.LockOSThread() // leave the thread to die with the goroutine
		return errors.Join(ferr, err)
	}
	return ferr
}

// serveIn runs an HTTP server in ns on addr that answers its address.
func serveIn(t *testing.T, ns *netNS, addr string) {
	t.Helper()
	var l net.Listener
	if err := inNetNS(ns, func() (err error) { l, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, addr) }), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// get asks url from ns on a new connection each time and returns the
// body: which endpoint answered.
func get(ns *netNS, url string) (string, error) {
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = inNetNS(ns, func() error {
			c, err = (&net.Dialer{Timeout: 3 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// spread asks n times and counts the answers by endpoint.
func spread(t *testing.T, ns *netNS, url string, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for range n {
		body, err := get(ns, url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		seen[strings.Split(body, ":")[0]]++
	}
	return seen
}

func testService(typ api.ServiceType) *api.Service {
	svc := &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: api.ServiceSpec{
		Type: typ, ClusterIP: vip, ClusterIPs: []string{vip}, Selector: map[string]string{"app": "web"},
		Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
	}}
	if typ == api.ServiceTypeNodePort {
		svc.Spec.Ports[0].NodePort = 30080
	}
	api.Default(svc)
	return svc
}

func testSlice(ready map[string]bool) *api.EndpointSlice {
	name, port, proto := "http", int32(8080), api.ProtocolTCP
	es := &api.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-abcde", Labels: map[string]string{api.LabelServiceName: "web"}},
		AddressType: api.AddressTypeIPv4, Ports: []api.EndpointSlicePort{{Name: &name, Port: &port, Protocol: &proto}}}
	for _, ip := range endpointIPs {
		r := ready[ip]
		node := "node-1"
		es.Endpoints = append(es.Endpoints, api.Endpoint{Addresses: []string{ip}, NodeName: &node, Conditions: api.EndpointConditions{Ready: &r, Serving: &r}})
	}
	return es
}

// TestProxyInNetNS: real nftables in a namespace the test makes. A
// ClusterIP balances over three endpoints and stops sending to one that
// turns unready; a NodePort answers on the node's address from another
// namespace; rules flushed by hand come back; ClientIP affinity keeps a
// client on one endpoint; a LoadBalancer keeps to its
// loadBalancerSourceRanges; a service without endpoints refuses;
// Cleanup leaves nothing.
func TestProxyInNetNS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces and nftables")
	}
	ip := testtool.Need(t, "ip")
	node := newNetNS(t, ip, "node")
	client := newNetNS(t, ip, "client")
	veth := fmt.Sprintf("bp%d", os.Getpid()%100000)
	run(t, ip, "link", "add", veth, "netns", node.name, "type", "veth", "peer", "name", "eth0", "netns", client.name)
	run(t, ip, "-n", node.name, "addr", "add", nodeLink+"/24", "dev", veth)
	run(t, ip, "-n", node.name, "link", "set", veth, "up")
	run(t, ip, "-n", client.name, "addr", "add", clientIP+"/24", "dev", "eth0")
	run(t, ip, "-n", client.name, "link", "set", "eth0", "up")
	run(t, ip, "-n", client.name, "route", "add", "default", "via", nodeLink)
	// The endpoints are addresses of the node (as pods behind a bridge
	// would be routes of it); the service CIDR is routed out, as a
	// default route would take it.
	for _, a := range append([]string{nodeIP}, endpointIPs...) {
		run(t, ip, "-n", node.name, "addr", "add", a+"/32", "dev", veth)
	}
	for _, a := range endpointIPs {
		serveIn(t, node, a+":8080")
	}
	run(t, ip, "-n", node.name, "route", "add", "198.19.0.0/16", "via", clientIP, "src", nodeIP)

	s := NewSyncer(int(node.h))
	t.Cleanup(func() { s.Cleanup() })
	all := map[string]bool{endpointIPs[0]: true, endpointIPs[1]: true, endpointIPs[2]: true}
	sync := func(wantFull bool, svc *api.Service, ready map[string]bool) {
		t.Helper()
		full, err := s.Sync(Build(Input{NodeName: "node-1", Services: []*api.Service{svc}, Slices: []*api.EndpointSlice{testSlice(ready)}}))
		if err != nil {
			t.Fatal(err)
		}
		if full != wantFull {
			t.Fatalf("sync wrote the table whole: %v, want %v", full, wantFull)
		}
	}
	sync(true, testService(api.ServiceTypeNodePort), all)
	url := "http://" + vip + ":80/"
	seen := spread(t, node, url, 60)
	if len(seen) != 3 {
		t.Fatalf("60 connections to the ClusterIP reached %v, want all three endpoints", seen)
	}
	// One turns unready: no connection goes to it any more.
	sync(false, testService(api.ServiceTypeNodePort), map[string]bool{endpointIPs[0]: true, endpointIPs[1]: true})
	if seen := spread(t, node, url, 40); seen[endpointIPs[2]] != 0 || len(seen) != 2 {
		t.Fatalf("after %s turned unready: %v", endpointIPs[2], seen)
	}
	// NodePort on the node's address, from outside.
	nodePortURL := "http://" + nodeLink + ":30080/"
	if seen := spread(t, client, nodePortURL, 20); len(seen) != 2 || seen[endpointIPs[2]] != 0 {
		t.Fatalf("the node port reached %v", seen)
	}
	// Flushed by hand: the next sync writes it whole again.
	c, err := nftables.New(nftables.WithNetNSFd(int(node.h)))
	if err != nil {
		t.Fatal(err)
	}
	c.DelTable(&nftables.Table{Name: Table, Family: nftables.TableFamilyIPv4})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := get(node, url); err == nil {
		t.Fatal("the ClusterIP answers with the table gone")
	}
	sync(true, testService(api.ServiceTypeNodePort), all)
	if seen := spread(t, node, url, 30); len(seen) != 3 {
		t.Fatalf("after the rebuild: %v", seen)
	}
	// ClientIP affinity: every connection of a client goes to one endpoint.
	sticky := testService(api.ServiceTypeNodePort)
	sticky.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	api.Default(sticky)
	sync(false, sticky, all)
	if seen := spread(t, node, url, 20); len(seen) != 1 {
		t.Fatalf("with ClientIP affinity: %v", seen)
	}
	// A LoadBalancer on the node's address takes the client while its
	// address is in loadBalancerSourceRanges, and drops it once not.
	lb := testService(api.ServiceTypeLoadBalancer)
	lb.Spec.Ports[0].NodePort = 30081
	lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: nodeLink}}
	lb.Spec.LoadBalancerSourceRanges = []string{"198.18.9.0/24", clientIP + "/32"}
	sync(false, lb, all)
	lbURL := "http://" + nodeLink + ":80/"
	if seen := spread(t, client, lbURL, 10); len(seen) == 0 {
		t.Fatalf("the load balancer reached %v", seen)
	}
	lb.Spec.LoadBalancerSourceRanges = []string{"198.18.9.0/24"}
	sync(false, lb, all)
	if body, err := get(client, lbURL); err == nil {
		t.Fatalf("a client outside loadBalancerSourceRanges reached %q", body)
	}
	// Its node port is not the load balancer's: the ranges leave it be.
	if _, err := get(client, "http://"+nodeLink+":30081/"); err != nil {
		t.Fatalf("the node port of a load balancer with source ranges: %v", err)
	}
	lb.Spec.LoadBalancerSourceRanges = nil
	sync(false, lb, all)
	if _, err := get(client, lbURL); err != nil {
		t.Fatalf("without source ranges: %v", err)
	}
	// No endpoint: the connection is refused at once.
	sync(false, testService(api.ServiceTypeNodePort), nil)
	if _, err := get(node, url); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a service without endpoints: %v, want connection refused", err)
	}
	if err := s.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTableOfFamily(Table, nftables.TableFamilyIPv4); err == nil {
		t.Fatal("the table outlives Cleanup")
	}
}
