package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane"
	"github.com/berth-dev/berth/controlplane/cptest"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// cluster is a control plane with services of endpoints written
// straight into its store, and a proxy following it through the API
// into a network namespace of the test's.
type cluster struct {
	store *store.Store
	node  *netNS
	mu    sync.Mutex
	// want, when set, is tested on each Ruleset synced; the first that
	// passes sends the time its transaction was in to hit.
	want func(*Ruleset) bool
	hit  chan time.Time
}

var (
	serviceKind = api.MustLookupResource("services")
	sliceKind   = api.MustLookupResource("endpointslices")
)

// endpointIP is the j-th endpoint of the i-th service, inside
// 198.18.0.0/15; nothing is sent to it.
func endpointIP(i, j int) string { return fmt.Sprintf("198.18.%d.%d", 100+i/25, (i%25)*10+j+1) }

func sliceOf(i, n int, ready func(j int) bool) *api.EndpointSlice {
	name, port, proto := "http", int32(8080), api.ProtocolTCP
	es := &api.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("s%d-1", i), Labels: map[string]string{api.LabelServiceName: fmt.Sprintf("s%d", i)}},
		AddressType: api.AddressTypeIPv4, Ports: []api.EndpointSlicePort{{Name: &name, Port: &port, Protocol: &proto}}}
	for j := range n {
		r := ready(j)
		node := "node-1"
		es.Endpoints = append(es.Endpoints, api.Endpoint{Addresses: []string{endpointIP(i, j)}, NodeName: &node, Conditions: api.EndpointConditions{Ready: &r, Serving: &r}})
	}
	return es
}

func startCluster(tb testing.TB, services, endpoints int, options ...func(*Options)) *cluster {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root for network namespaces and nftables")
	}
	ip := testtool.Need(tb, "ip")
	cp := cptest.Start(tb, controlplane.Config{ServiceCIDR: "198.19.0.0/16"})
	c := &cluster{store: cp.Store(), node: newNetNS(tb, ip, "api"), hit: make(chan time.Time, 1)}
	ctx := context.Background()
	for start := 0; start < services; start += 100 {
		if _, err := c.store.Txn(ctx, func(tx *store.Txn) error {
			for i := start; i < min(start+100, services); i++ {
				svc := &api.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("s%d", i)},
					Spec: api.ServiceSpec{Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
				api.Default(svc)
				if _, err := tx.Create(svc); err != nil {
					return err
				}
				if _, err := tx.Create(sliceOf(i, endpoints, func(int) bool { return true })); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			tb.Fatal(err)
		}
	}
	cfg, err := client.LoadKubeconfig(cp.Credentials().Paths.AdminKubeconfig)
	if err != nil {
		tb.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	s := NewSyncer(int(c.node.h))
	tb.Cleanup(func() { s.Cleanup() })
	opts := Options{Client: cl, NodeName: "node-1", Syncer: s, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), Synced: c.synced}
	for _, o := range options {
		o(&opts)
	}
	p := New(opts)
	testtool.Run(tb, "service proxy", p.Run)
	return c
}

func (c *cluster) synced(rules []*Ruleset, done time.Time) {
	rs := rules[0] // IPv4's
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.want != nil && c.want(rs) {
		c.want = nil
		c.hit <- done
	}
}

// vipOf is service i's virtual IP, as the allocator gave it.
func (c *cluster) vipOf(tb testing.TB, i int) netip.Addr {
	obj, err := c.store.Get(serviceKind, "default", fmt.Sprintf("s%d", i))
	if err != nil {
		tb.Fatal(err)
	}
	return netip.MustParseAddr(obj.(*api.Service).Spec.ClusterIP)
}

// serves tells whether rs sends vip:80 to addr.
func serves(rs *Ruleset, vip netip.Addr, addr string) bool {
	chain, ok := rs.IPs[VIP{vip, ProtoTCP, 80}]
	return ok && slices.ContainsFunc(rs.Services[chain].Endpoints, func(e string) bool { return rs.Endpoints[e].Addr.String() == addr })
}

// setReady writes service i's slice with endpoint 0 ready or not and
// returns how long until a sync that reflects it was in.
func (c *cluster) setReady(tb testing.TB, i, endpoints int, vip netip.Addr, ready bool) time.Duration {
	tb.Helper()
	c.mu.Lock()
	c.want = func(rs *Ruleset) bool { return serves(rs, vip, endpointIP(i, 0)) == ready }
	c.mu.Unlock()
	es := sliceOf(i, endpoints, func(j int) bool { return j != 0 || ready })
	start := time.Now()
	if _, err := c.store.Txn(context.Background(), func(tx *store.Txn) error {
		old, err := tx.Get(sliceKind, "default", es.Name)
		if err != nil {
			return err
		}
		es.ResourceVersion = old.GetResourceVersion()
		_, err = tx.Update(es)
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	select {
	case done := <-c.hit:
		return done.Sub(start)
	case <-time.After(60 * time.Second):
		tb.Fatalf("service s%d: the rules never reflected endpoint ready=%v", i, ready)
	}
	return 0
}

// TestProxyFollowsTheAPI: the proxy reads Services and EndpointSlices
// through the API and writes their rules, and a slice's change reaches
// the rules.
func TestProxyFollowsTheAPI(t *testing.T) {
	c := startCluster(t, 3, 3)
	vip := c.vipOf(t, 1)
	c.setReady(t, 1, 3, vip, false)
	c.setReady(t, 1, 3, vip, true)
}

// TestProxyFollowsPolicies: the proxy reads Pods, Namespaces and
// NetworkPolicies through the API: a policy that selects a pod of the
// node isolates it, and its deletion opens it again.
func TestProxyFollowsPolicies(t *testing.T) {
	c := startCluster(t, 1, 1)
	ctx := context.Background()
	pod := policyPodOf("default", "web", "node-1", "198.18.7.10", map[string]string{"app": "web"})
	np := policyOf("default", "deny", map[string]string{"app": "web"}, nil)
	addr := netip.MustParseAddr("198.18.7.10")
	wait := func(what string, want func(*Ruleset) bool, write func(tx *store.Txn) error) {
		t.Helper()
		c.mu.Lock()
		c.want = want
		c.mu.Unlock()
		if _, err := c.store.Txn(ctx, write); err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.hit:
		case <-time.After(60 * time.Second):
			t.Fatalf("the rules never showed %s", what)
		}
	}
	wait("the pod isolated", func(rs *Ruleset) bool { _, ok := rs.PolicyIngress[addr]; return ok }, func(tx *store.Txn) error {
		if _, err := tx.Create(pod); err != nil {
			return err
		}
		_, err := tx.Create(np)
		return err
	})
	wait("the pod open again", func(rs *Ruleset) bool { return len(rs.PolicyIngress) == 0 && len(rs.PolicyChains) == 0 }, func(tx *store.Txn) error {
		_, err := tx.Delete(api.MustLookupResource("networkpolicies"), "default", "deny", store.DeleteOptions{})
		return err
	})
}

// TestProxyServesHealthCheckNodePorts: a Service turned LoadBalancer of
// externalTrafficPolicy Local through the API gets a healthCheckNodePort
// from the control plane, and the proxy answers on it at the node's
// address: 200 with the node's ready endpoints counted, 503 once none is
// ready.
func TestProxyServesHealthCheckNodePorts(t *testing.T) {
	c := startCluster(t, 1, 2, func(o *Options) { o.HealthCheckAddress = "127.0.0.1" })
	ctx := context.Background()
	var hc int32
	if _, err := c.store.Txn(ctx, func(tx *store.Txn) error {
		o, err := tx.Get(serviceKind, "default", "s0")
		if err != nil {
			return err
		}
		svc := o.(*api.Service).DeepCopy()
		svc.Spec.Type, svc.Spec.ExternalTrafficPolicy = api.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal
		out, err := tx.Update(svc)
		if err == nil {
			hc = out.(*api.Service).Spec.HealthCheckNodePort
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if hc == 0 {
		t.Fatal("no healthCheckNodePort allocated")
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", hc)
	hcl := &http.Client{Timeout: 2 * time.Second}
	answers := func(code int, local string) func() error {
		return func() error {
			resp, err := hcl.Get(url)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != code || !strings.Contains(string(body), `"localEndpoints":`+local) {
				return fmt.Errorf("%d %s", resp.StatusCode, body)
			}
			return nil
		}
	}
	testtool.WaitFor(t, 30*time.Second, "200 with two local endpoints", answers(http.StatusOK, "2"))
	if _, err := c.store.Txn(ctx, func(tx *store.Txn) error {
		es := sliceOf(0, 2, func(int) bool { return false })
		old, err := tx.Get(sliceKind, "default", es.Name)
		if err != nil {
			return err
		}
		es.ResourceVersion = old.GetResourceVersion()
		_, err = tx.Update(es)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 30*time.Second, "503 once no local endpoint is ready", answers(http.StatusServiceUnavailable, "0"))
}
