package servicealloc

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/bolt"
	"github.com/berth-dev/berth/store/etcd"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
)

func newAllocator(t testing.TB, cidrs, ports string) *Allocator {
	t.Helper()
	cs, err := ParseCIDRs(cidrs)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := ParsePortRange(ports)
	if err != nil {
		t.Fatal(err)
	}
	return New(cs, pr)
}

func newStore(t testing.TB, b store.Backend, a *Allocator) *store.Store {
	t.Helper()
	s, err := store.New(b, store.Options{Logger: slog.New(slog.DiscardHandler), Admit: []store.AdmitFunc{a.Admit}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func service(name string, typ api.ServiceType, mutate ...func(*api.Service)) *api.Service {
	svc := &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: api.ServiceSpec{Type: typ, Selector: map[string]string{"app": name}, Ports: []api.ServicePort{{Name: "http", Port: 80}}}}
	for _, m := range mutate {
		m(svc)
	}
	api.Default(svc)
	return svc
}

func create(t testing.TB, s *store.Store, svc *api.Service) (*api.Service, error) {
	t.Helper()
	out, err := s.Create(context.Background(), svc)
	if err != nil {
		return nil, err
	}
	return out.(*api.Service), nil
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, first, err string
	}{
		{"10.43.0.0/16", "10.43.0.1", ""},
		{"198.18.0.0/30", "198.18.0.1", ""},
		{"fd00:43::/112", "fd00:43::1", ""},
		{"10.43.0.0/16,fd00:43::/112", "10.43.0.1", ""},
		{"10.43.0.0/16,10.44.0.0/16", "", "at most one of each IP family"},
		{"10.43.0.0/31", "", "too small"},
		{"nonsense", "", "service CIDR"},
	} {
		cs, err := ParseCIDRs(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseCIDRs(%q) = %v, want error %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || cs[0].First().String() != tc.first {
			t.Errorf("ParseCIDRs(%q): first %v, %v; want %s", tc.in, cs, err, tc.first)
		}
	}
	c, _ := ParseCIDRs("198.18.0.0/30")
	for ip, want := range map[string]bool{"198.18.0.0": false, "198.18.0.1": true, "198.18.0.2": true, "198.18.0.3": false, "198.18.0.4": false} {
		if got := c[0].contains(mustAddr(ip)); got != want {
			t.Errorf("contains(%s) = %v", ip, got)
		}
	}
	for _, tc := range []struct{ in, out string }{{"30000-32767", "30000-32767"}, {"8080", "8080-8080"}} {
		r, err := ParsePortRange(tc.in)
		if err != nil || r.String() != tc.out {
			t.Errorf("ParsePortRange(%q) = %v, %v", tc.in, r, err)
		}
	}
	for _, bad := range []string{"", "2-1", "0-10", "a-b", "30000-70000"} {
		if _, err := ParsePortRange(bad); err == nil {
			t.Errorf("ParsePortRange(%q): no error", bad)
		}
	}
}

func TestAllocate(t *testing.T) {
	a := newAllocator(t, "198.18.0.0/24,fd00:198::/120", "30000-30009")
	s := newStore(t, store.Memory{}, a)
	web, err := create(t, s, service("web", api.ServiceTypeClusterIP))
	if err != nil {
		t.Fatal(err)
	}
	if !a.cidrs[0].contains(mustAddr(web.Spec.ClusterIP)) || len(web.Spec.ClusterIPs) != 1 || web.Spec.ClusterIPs[0] != web.Spec.ClusterIP {
		t.Fatalf("web: clusterIP %q clusterIPs %v", web.Spec.ClusterIP, web.Spec.ClusterIPs)
	}
	if *web.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || len(web.Spec.IPFamilies) != 1 || web.Spec.IPFamilies[0] != corev1.IPv4Protocol {
		t.Fatalf("web: families %v policy %v", web.Spec.IPFamilies, *web.Spec.IPFamilyPolicy)
	}
	// The address asked for is given when free, refused when taken or
	// outside the range, with Kubernetes' messages.
	if got, err := create(t, s, service("asked", api.ServiceTypeClusterIP, func(s *api.Service) { s.Spec.ClusterIP = "198.18.0.10" })); err != nil || got.Spec.ClusterIP != "198.18.0.10" {
		t.Fatalf("asked: %v %v", got, err)
	}
	for _, tc := range []struct {
		ip, msg string
	}{
		{"198.18.0.10", `Service "taken" is invalid: spec.clusterIPs: Invalid value: ["198.18.0.10"]: failed to allocate IP 198.18.0.10: provided IP is already allocated`},
		{web.Spec.ClusterIP, "provided IP is already allocated"},
		{"10.0.0.1", "failed to allocate IP 10.0.0.1: the provided IP (10.0.0.1) is not in the valid range. The range of valid IPs is 198.18.0.0/24"},
		{"198.18.0.255", "not in the valid range"},
	} {
		_, err := create(t, s, service("taken", api.ServiceTypeClusterIP, func(s *api.Service) { s.Spec.ClusterIP = tc.ip }))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("clusterIP %s: %v, want Invalid with %q", tc.ip, err, tc.msg)
		}
	}
	// Headless: None, with its families.
	if got, err := create(t, s, service("headless", api.ServiceTypeClusterIP, func(s *api.Service) { s.Spec.ClusterIP = api.ClusterIPNone })); err != nil ||
		got.Spec.ClusterIP != api.ClusterIPNone || len(got.Spec.ClusterIPs) != 1 || got.Spec.ClusterIPs[0] != api.ClusterIPNone {
		t.Fatalf("headless: %+v %v", got, err)
	}
	// Dual-stack: one address of each family, the asked-for order kept.
	pref := corev1.IPFamilyPolicyPreferDualStack
	dual, err := create(t, s, service("dual", api.ServiceTypeClusterIP, func(s *api.Service) {
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &pref, []corev1.IPFamily{corev1.IPv6Protocol}
	}))
	if err != nil || len(dual.Spec.ClusterIPs) != 2 || !mustAddr(dual.Spec.ClusterIPs[0]).Is6() || !mustAddr(dual.Spec.ClusterIPs[1]).Is4() ||
		dual.Spec.IPFamilies[1] != corev1.IPv4Protocol {
		t.Fatalf("dual: %+v %v", dual, err)
	}
	// Node ports: given, asked for, refused.
	np, err := create(t, s, service("np", api.ServiceTypeNodePort, func(s *api.Service) {
		s.Spec.Ports = append(s.Spec.Ports, api.ServicePort{Name: "dns", Port: 53, Protocol: api.ProtocolUDP}, api.ServicePort{Name: "dns-tcp", Port: 53})
		api.Default(s)
	}))
	if err != nil {
		t.Fatal(err)
	}
	p := np.Spec.Ports
	if p[0].NodePort < 30000 || p[0].NodePort > 30009 || p[1].NodePort == p[0].NodePort || p[1].NodePort != p[2].NodePort {
		t.Fatalf("node ports %d %d %d: want in range, one per port number", p[0].NodePort, p[1].NodePort, p[2].NodePort)
	}
	for _, tc := range []struct {
		port int32
		msg  string
	}{
		{p[0].NodePort, fmt.Sprintf("spec.ports[0].nodePort: Invalid value: %d: provided port is already allocated", p[0].NodePort)},
		{80, "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-30009"},
	} {
		_, err := create(t, s, service("np2", api.ServiceTypeNodePort, func(s *api.Service) { s.Spec.Ports[0].NodePort = tc.port }))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("nodePort %d: %v, want %q", tc.port, err, tc.msg)
		}
	}
	lb, err := create(t, s, service("lb", api.ServiceTypeLoadBalancer))
	if err != nil || lb.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("lb: %+v %v", lb, err)
	}
	// An update that leaves the address and node port out keeps them;
	// moving to ClusterIP frees the node port, which another takes.
	upd := service("np", api.ServiceTypeNodePort, func(s *api.Service) {
		s.Spec.Ports = append(s.Spec.Ports, api.ServicePort{Name: "dns", Port: 53, Protocol: api.ProtocolUDP}, api.ServicePort{Name: "dns-tcp", Port: 53})
		api.Default(s)
	})
	if errs := api.ValidateUpdate(np, upd); len(errs) > 0 {
		t.Fatal(errs)
	}
	got, err := s.Update(context.Background(), upd)
	if err != nil || got.(*api.Service).Spec.ClusterIP != np.Spec.ClusterIP || got.(*api.Service).Spec.Ports[0].NodePort != p[0].NodePort {
		t.Fatalf("update: %+v %v", got, err)
	}
	upd = service("np", api.ServiceTypeClusterIP)
	upd.Spec.ClusterIP = np.Spec.ClusterIP
	if _, err := s.Update(context.Background(), upd); err != nil {
		t.Fatal(err)
	}
	if _, err := create(t, s, service("np3", api.ServiceTypeNodePort, func(s *api.Service) { s.Spec.Ports[0].NodePort = p[0].NodePort })); err != nil {
		t.Fatalf("a freed node port: %v", err)
	}
	// A deleted service's address is free again.
	if _, err := s.Delete(context.Background(), serviceKind, "default", "asked", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := create(t, s, service("again", api.ServiceTypeClusterIP, func(s *api.Service) { s.Spec.ClusterIP = "198.18.0.10" })); err != nil {
		t.Fatalf("a freed address: %v", err)
	}
	// ExternalName takes nothing.
	if got, err := create(t, s, service("ext", api.ServiceTypeExternalName, func(s *api.Service) { s.Spec.ExternalName = "example.com" })); err != nil || got.Spec.ClusterIP != "" {
		t.Fatalf("ext: %+v %v", got, err)
	}
}

func TestRequireDualStackOnSingleStack(t *testing.T) {
	s := newStore(t, store.Memory{}, newAllocator(t, "198.18.0.0/24", DefaultNodePortRange))
	req := corev1.IPFamilyPolicyRequireDualStack
	_, err := create(t, s, service("dual", api.ServiceTypeClusterIP, func(s *api.Service) { s.Spec.IPFamilyPolicy = &req }))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "not configured for dual-stack") {
		t.Fatalf("got %v", err)
	}
	_, err = create(t, s, service("v6", api.ServiceTypeClusterIP, func(s *api.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} }))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.ipFamilies[0]") {
		t.Fatalf("got %v", err)
	}
}

// TestNeverTwice fills a range of 14 addresses and 10 node ports from
// many writers at once: every address and port is handed out once, and
// the next service is told the range is full.
func TestNeverTwice(t *testing.T) {
	s := newStore(t, store.Memory{}, newAllocator(t, "198.18.0.0/28", "30000-30009"))
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			_, err := create(t, s, service(fmt.Sprintf("s%d", i), api.ServiceTypeNodePort))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	var full int
	for err := range errs {
		if err != nil {
			if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "is full") {
				t.Errorf("unexpected error %v", err)
			}
			full++
		}
	}
	if full != 10 {
		t.Errorf("%d refused, want 10 (10 node ports)", full)
	}
	checkUnique(t, s, 10)
}

// checkUnique fails if two services of s share an address or node port,
// or if there are not n services with an address.
func checkUnique(t *testing.T, s *store.Store, n int) {
	t.Helper()
	objs, _, err := s.List(serviceKind, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	ips, ports := map[string]string{}, map[string]string{}
	for _, o := range objs {
		svc := o.(*api.Service)
		for _, ip := range api.ServiceClusterIPs(svc) {
			if other, ok := ips[ip]; ok {
				t.Errorf("%s held by %s and %s", ip, other, svc.Name)
			}
			ips[ip] = svc.Name
		}
		for _, p := range api.ServiceNodePorts(svc) {
			if other, ok := ports[p]; ok {
				t.Errorf("node port %s held by %s and %s", p, other, svc.Name)
			}
			ports[p] = svc.Name
		}
	}
	if len(ips) != n {
		t.Errorf("%d addresses held, want %d", len(ips), n)
	}
}

// TestRestart allocates over a bolt file, reopens it as a restarted
// control plane would, and allocates the rest of the range: nothing is
// handed out twice.
func TestRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "berth.db")
	a := newAllocator(t, "198.18.0.0/28", DefaultNodePortRange)
	for round := range 2 {
		b, err := bolt.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := store.New(b, store.Options{Logger: slog.New(slog.DiscardHandler), Admit: []store.AdmitFunc{a.Admit}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 7 {
			if _, err := create(t, s, service(fmt.Sprintf("r%d-%d", round, i), api.ServiceTypeNodePort)); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if round == 1 {
			checkUnique(t, s, 14)
			if _, err := create(t, s, service("one-more", api.ServiceTypeClusterIP)); !apierrors.IsInternalError(err) {
				t.Errorf("a full range: %v", err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaderChange allocates on one control plane over etcd, hands the
// lead to another and allocates the rest there.
func TestLeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("runs etcd")
	}
	ep := etcdtest.Start(t)
	a := newAllocator(t, "198.18.0.0/28", DefaultNodePortRange)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func(name string) (*etcd.Backend, *store.Store) {
		b, err := etcd.Open(ctx, etcd.Options{Endpoints: []string{ep}, LeaseTTL: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return b, newStore(t, b, a)
	}
	_, first := open("first")
	if err := first.Lead(ctx, "https://first.test"); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		if _, err := create(t, first, service(fmt.Sprintf("a%d", i), api.ServiceTypeNodePort)); err != nil {
			t.Fatal(err)
		}
	}
	_, second := open("second")
	led := make(chan error, 1)
	go func() { led <- second.Lead(ctx, "https://second.test") }()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-led; err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		if _, err := create(t, second, service(fmt.Sprintf("b%d", i), api.ServiceTypeNodePort)); err != nil {
			t.Fatal(err)
		}
	}
	checkUnique(t, second, 14)
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// A LoadBalancer Service of externalTrafficPolicy Local gets a
// healthCheckNodePort from the node port range, as Kubernetes gives it:
// kept across updates that name none, refused when taken (by another
// Service's node port or its own) or out of range or on a Service that
// has no use for it, and let go when the policy turns Cluster, free for
// another Service to take.
func TestHealthCheckNodePort(t *testing.T) {
	a := newAllocator(t, "198.18.0.0/24", "30000-30009")
	s := newStore(t, store.Memory{}, a)
	ctx := context.Background()
	local := func(s *api.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }
	lb, err := create(t, s, service("lb", api.ServiceTypeLoadBalancer, local))
	if err != nil {
		t.Fatal(err)
	}
	hc := lb.Spec.HealthCheckNodePort
	if hc < 30000 || hc > 30009 || hc == lb.Spec.Ports[0].NodePort {
		t.Fatalf("healthCheckNodePort %d, node port %d: want another port of the range", hc, lb.Spec.Ports[0].NodePort)
	}
	if _, err := create(t, s, service("cluster", api.ServiceTypeLoadBalancer)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(api.KindOf(&api.Service{}), "default", "cluster"); got.(*api.Service).Spec.HealthCheckNodePort != 0 {
		t.Errorf("a Cluster policy LoadBalancer got a healthCheckNodePort")
	}

	refused := []struct {
		name, want string
		mutate     func(*api.Service)
	}{
		{"taken", "spec.healthCheckNodePort: Invalid value: " + fmt.Sprint(hc) + ": provided port is already allocated",
			func(s *api.Service) { local(s); s.Spec.HealthCheckNodePort = hc }},
		{"own", "provided port is already allocated",
			func(s *api.Service) { local(s); s.Spec.Ports[0].NodePort = 30000; s.Spec.HealthCheckNodePort = 30000 }},
		{"outside", "provided port is not in the valid range. The range of valid ports is 30000-30009",
			func(s *api.Service) { local(s); s.Spec.HealthCheckNodePort = 31000 }},
		{"unused", "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
			func(s *api.Service) { s.Spec.HealthCheckNodePort = 30009 }},
	}
	for _, r := range refused {
		if _, err := create(t, s, service(r.name, api.ServiceTypeLoadBalancer, r.mutate)); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s: %v, want %q", r.name, err, r.want)
		}
	}

	// An update that names none keeps it.
	next := lb.DeepCopy()
	next.Spec.HealthCheckNodePort = 0
	next.Labels = map[string]string{"v": "2"}
	out, err := s.Update(ctx, next)
	if err != nil || out.(*api.Service).Spec.HealthCheckNodePort != hc {
		t.Fatalf("an update naming none: %v, port %d, want %d", err, out.(*api.Service).Spec.HealthCheckNodePort, hc)
	}
	// Cluster policy: let go, and another takes it.
	next = out.(*api.Service).DeepCopy()
	next.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	if out, err = s.Update(ctx, next); err != nil || out.(*api.Service).Spec.HealthCheckNodePort != 0 {
		t.Fatalf("turned Cluster: %v, port %d, want 0", err, out.(*api.Service).Spec.HealthCheckNodePort)
	}
	if got, err := create(t, s, service("taker", api.ServiceTypeLoadBalancer, func(s *api.Service) { local(s); s.Spec.HealthCheckNodePort = hc })); err != nil || got.Spec.HealthCheckNodePort != hc {
		t.Fatalf("taking the port let go: %v, %v", got, err)
	}
}

// TestHealthCheckNodePortNamedFirst: a healthCheckNodePort a Service
// asks for is its own before its ports are drawn, and one it held is
// kept when a port is added: no draw takes it, however the draws fall.
// With two ports of the range free, a draw that ignored it would take it
// half the time; twenty rounds each way.
func TestHealthCheckNodePortNamedFirst(t *testing.T) {
	a := newAllocator(t, "198.18.0.0/24", "30000-30009")
	s := newStore(t, store.Memory{}, a)
	ctx := context.Background()
	for i := range 8 {
		fill := service(fmt.Sprintf("fill-%d", i), api.ServiceTypeNodePort, func(s *api.Service) { s.Spec.Ports[0].NodePort = int32(30000 + i) })
		if _, err := create(t, s, fill); err != nil {
			t.Fatal(err)
		}
	}
	local := func(s *api.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }
	svcKind := api.KindOf(&api.Service{})
	for round := range 20 {
		got, err := create(t, s, service("asks", api.ServiceTypeLoadBalancer, local, func(s *api.Service) { s.Spec.HealthCheckNodePort = 30009 }))
		if err != nil || got.Spec.HealthCheckNodePort != 30009 || got.Spec.Ports[0].NodePort != 30008 {
			t.Fatalf("round %d: %v %v, want health check port 30009 and node port 30008", round, got, err)
		}
		if _, err := s.Delete(ctx, svcKind, "default", "asks", store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	held, err := create(t, s, service("held", api.ServiceTypeLoadBalancer, local, func(s *api.Service) { s.Spec.Ports[0].NodePort = 30008 }))
	if err != nil || held.Spec.HealthCheckNodePort != 30009 {
		t.Fatalf("%v %v, want health check port 30009", held, err)
	}
	if _, err := s.Delete(ctx, svcKind, "default", "fill-7", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		next := held.DeepCopy()
		next.Spec.Ports = append(next.Spec.Ports, api.ServicePort{Name: "extra", Port: 81, Protocol: api.ProtocolTCP})
		out, err := s.Update(ctx, next)
		if err != nil {
			t.Fatalf("round %d: adding a port: %v", round, err)
		}
		if svc := out.(*api.Service); svc.Spec.HealthCheckNodePort != 30009 || svc.Spec.Ports[1].NodePort != 30007 {
			t.Fatalf("round %d: health check port %d, new node port %d; want 30009 and 30007", round, svc.Spec.HealthCheckNodePort, svc.Spec.Ports[1].NodePort)
		}
		back := out.(*api.Service).DeepCopy()
		back.Spec.Ports = back.Spec.Ports[:1]
		o, err := s.Update(ctx, back)
		if err != nil {
			t.Fatal(err)
		}
		held = o.(*api.Service)
	}
}
