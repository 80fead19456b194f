package endpointslice

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/members/memberstest"
	"github.com/berth-dev/berth/store"
)

var web = map[string]string{"app": "web"}

func inNamespace(ns string) memberstest.PodOpt { return func(p *api.Pod) { p.Namespace = ns } }
func alsoIP(ip string) memberstest.PodOpt {
	return func(p *api.Pod) {
		p.Status.PodIPs = []api.PodIP{{IP: p.Status.PodIP}, {IP: ip}}
	}
}

// terminating keeps the pod in the store once deleted, by a finalizer.
func terminating(p *api.Pod) { p.Finalizers = []string{"test/hold"} }

// manyPods are n ready pods with distinct IPs.
func manyPods(n int) []api.Object {
	var out []api.Object
	for i := range n {
		out = append(out, memberstest.Pod(fmt.Sprintf("p%03d", i), fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)))
	}
	return out
}

// managedSlices reads the slices of a service the controller manages.
func managedSlices(t *testing.T, s *store.Store, svc string) []*api.EndpointSlice {
	t.Helper()
	var out []*api.EndpointSlice
	err := s.Snapshot().Each(sliceKind, store.Filter{Index: store.IndexService, Value: "default/" + svc, Labels: managed}, func(o api.Object) bool {
		out = append(out, o.(*api.EndpointSlice))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// row is one endpoint of a slice as the tests compare it: the slice's
// type and ports, the address and pod, and the conditions.
type row struct {
	Type                        api.AddressType
	Ports                       string
	Address, Pod                string
	Ready, Serving, Terminating bool
}

func rows(got []*api.EndpointSlice) []row {
	var out []row
	for _, es := range got {
		ports := portsCell(es.Ports)
		if len(es.Endpoints) == 0 {
			out = append(out, row{Type: es.AddressType, Ports: ports})
		}
		for _, e := range es.Endpoints {
			r := row{Type: es.AddressType, Ports: ports, Address: e.Addresses[0],
				Ready: *e.Conditions.Ready, Serving: *e.Conditions.Serving, Terminating: *e.Conditions.Terminating}
			if e.TargetRef != nil {
				r.Pod = e.TargetRef.Name
			}
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b row) int {
		return strings.Compare(string(a.Type)+a.Ports+a.Address+a.Pod, string(b.Type)+b.Ports+b.Address+b.Pod)
	})
	return out
}

// portsCell spells a slice's ports as name:port/protocol[:appProtocol],…
func portsCell(ports []api.EndpointSlicePort) string {
	s := ""
	for i, p := range ports {
		if i > 0 {
			s += ","
		}
		s += ptr.Deref(p.Name, "") + ":" + strconv.Itoa(int(ptr.Deref(p.Port, 0))) + "/" + string(ptr.Deref(p.Protocol, ""))
		if p.AppProtocol != nil {
			s += ":" + *p.AppProtocol
		}
	}
	return s
}

// readyEndpoints lists the ready address:port pairs of slices, as a proxy
// would route to them, at their pods' first IPs, which Endpoints list.
func readyEndpoints(s *store.Store, got []*api.EndpointSlice) []string {
	var out []string
	for _, es := range got {
		for _, e := range es.Endpoints {
			obj, err := s.Get(podKind, e.TargetRef.Namespace, e.TargetRef.Name)
			if !*e.Conditions.Ready || err != nil || obj.(*api.Pod).Status.PodIP != e.Addresses[0] {
				continue
			}
			if len(es.Ports) == 0 {
				out = append(out, e.Addresses[0])
			}
			for _, p := range es.Ports {
				out = append(out, net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*p.Port))))
			}
		}
	}
	slices.Sort(out)
	return out
}

// readyAddresses lists the ready address:port pairs of an Endpoints.
func readyAddresses(ep *api.Endpoints) []string {
	var out []string
	for _, ss := range ep.Subsets {
		for _, a := range ss.Addresses {
			if len(ss.Ports) == 0 {
				out = append(out, a.IP)
			}
			for _, p := range ss.Ports {
				out = append(out, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	slices.Sort(out)
	return out
}

func create(t *testing.T, s *store.Store, objs ...api.Object) {
	t.Helper()
	for _, o := range objs {
		api.Default(o)
		if _, err := s.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// waitTime bounds what a test waits for a controller to do.
const waitTime = 10 * time.Second

func labelSet(m map[string]string) labels.Set { return labels.Set(m) }
