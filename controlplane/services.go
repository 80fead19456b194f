package controlplane

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/servicealloc"
	"github.com/berth-dev/berth/store"
)

// Defaults of the service flags, as k3s's.
const (
	DefaultServiceCIDR          = servicealloc.DefaultServiceCIDR
	DefaultServiceNodePortRange = servicealloc.DefaultNodePortRange
)

// KubernetesServiceName is the Service in default that names the API
// servers, as in every Kubernetes cluster.
const KubernetesServiceName = "kubernetes"

// kubernetesServicePeriod is how often the leader checks the kubernetes
// Service and its endpoints, as kube-apiserver's endpoint reconciler.
const kubernetesServicePeriod = 10 * time.Second

// serviceAllocator is the allocator of --service-cidr and
// --service-node-port-range.
func (cfg Config) serviceAllocator() (*servicealloc.Allocator, error) {
	cidrs, err := servicealloc.ParseCIDRs(cmp.Or(cfg.ServiceCIDR, DefaultServiceCIDR))
	if err != nil {
		return nil, fmt.Errorf("--service-cidr: %w", err)
	}
	ports, err := servicealloc.ParsePortRange(cmp.Or(cfg.ServiceNodePortRange, DefaultServiceNodePortRange))
	if err != nil {
		return nil, fmt.Errorf("--service-node-port-range: %w", err)
	}
	return servicealloc.New(cidrs, ports), nil
}

// apiEndpoint is the address and port the kubernetes Service's
// endpoints name: the advertised address, else this machine's first,
// else loopback.
func (s *Server) apiEndpoint() (netip.Addr, int32) {
	u := advertiseURL(s.cfg, s.listener.Addr(), interfaceAddrs)
	host, port, _ := net.SplitHostPort(u[len("https://"):])
	p, _ := strconv.Atoi(port)
	a, err := netip.ParseAddr(host)
	if err != nil {
		if addrs, lerr := net.LookupIP(host); lerr == nil && len(addrs) > 0 {
			a, _ = netip.AddrFromSlice(addrs[0])
		} else {
			a = netip.MustParseAddr("127.0.0.1")
		}
	}
	return a.Unmap(), int32(p)
}

// kubernetesObjects are the kubernetes Service at the service range's
// first address, port 443 to the API's port, and its Endpoints and
// EndpointSlice naming addr.
func kubernetesObjects(first, addr netip.Addr, port int32) (*api.Service, *api.Endpoints, *api.EndpointSlice) {
	meta := metav1.ObjectMeta{Namespace: api.NamespaceDefault, Name: KubernetesServiceName,
		Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}}
	svc := &api.Service{ObjectMeta: meta, Spec: api.ServiceSpec{
		Type:       api.ServiceTypeClusterIP,
		ClusterIP:  first.String(),
		ClusterIPs: []string{first.String()},
		Ports:      []api.ServicePort{{Name: "https", Protocol: api.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(port)}},
	}}
	api.Default(svc)
	ep := &api.Endpoints{ObjectMeta: *meta.DeepCopy(), Subsets: []api.EndpointSubset{{
		Addresses: []api.EndpointAddress{{IP: addr.String()}},
		Ports:     []api.EndpointPort{{Name: "https", Port: port, Protocol: api.ProtocolTCP}},
	}}}
	at := api.AddressTypeIPv4
	if addr.Is6() {
		at = api.AddressTypeIPv6
	}
	t := true
	name, proto := "https", api.ProtocolTCP
	slice := &api.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: api.NamespaceDefault, Name: KubernetesServiceName,
			Labels: map[string]string{api.LabelServiceName: KubernetesServiceName}},
		AddressType: at,
		Endpoints:   []api.Endpoint{{Addresses: []string{addr.String()}, Conditions: api.EndpointConditions{Ready: &t, Serving: &t}}},
		Ports:       []api.EndpointSlicePort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	return svc, ep, slice
}

// ensureKubernetesService makes the kubernetes Service and its
// endpoints, or sets them right, in one transaction. A Service of that
// name a user made is left as it is but for its endpoints.
func (s *Server) ensureKubernetesService(ctx context.Context) error {
	addr, port := s.apiEndpoint()
	svc, ep, slice := kubernetesObjects(s.svcAlloc.CIDRs()[0].First(), addr, port)
	_, err := s.store.Txn(ctx, func(tx *store.Txn) error {
		if _, err := tx.Get(api.KindOf(svc), svc.Namespace, svc.Name); store.IsNotFound(err) {
			if _, err := tx.Create(svc); err != nil {
				return fmt.Errorf("create service default/kubernetes: %w", err)
			}
		} else if err != nil {
			return err
		}
		if err := putIfChanged(tx, ep, func(o api.Object) bool {
			return equality.Semantic.DeepEqual(o.(*api.Endpoints).Subsets, ep.Subsets)
		}); err != nil {
			return err
		}
		return putIfChanged(tx, slice, func(o api.Object) bool {
			old := o.(*api.EndpointSlice)
			return old.AddressType == slice.AddressType && equality.Semantic.DeepEqual(old.Endpoints, slice.Endpoints) &&
				equality.Semantic.DeepEqual(old.Ports, slice.Ports)
		})
	})
	return err
}

// putIfChanged creates obj, or replaces the stored one unless same
// says it already matches.
func putIfChanged(tx *store.Txn, obj api.Object, same func(api.Object) bool) error {
	k := api.KindOf(obj)
	old, err := tx.Get(k, obj.GetNamespace(), obj.GetName())
	switch {
	case store.IsNotFound(err):
		_, err = tx.Create(obj)
	case err != nil:
	case k.GVK.Kind == "EndpointSlice" && old.(*api.EndpointSlice).AddressType != obj.(*api.EndpointSlice).AddressType:
		// The address type cannot change: the slice is made again.
		if _, err = tx.Delete(k, obj.GetNamespace(), obj.GetName(), store.DeleteOptions{}); err == nil {
			_, err = tx.Create(obj)
		}
	case !same(old):
		obj.SetResourceVersion(old.GetResourceVersion())
		_, err = tx.Update(obj)
	}
	if err != nil {
		return fmt.Errorf("%s default/kubernetes: %w", k.Resource, err)
	}
	return nil
}

// runKubernetesService keeps the kubernetes Service while this control
// plane leads.
func (s *Server) runKubernetesService(ctx context.Context) {
	t := s.cfg.Clock.NewTicker(kubernetesServicePeriod)
	defer t.Stop()
	for {
		if err := s.ensureKubernetesService(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("kubernetes service", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}
