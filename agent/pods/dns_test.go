package pods

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

func TestPodDNS(t *testing.T) {
	node := &runtime.DNS{Servers: []string{"192.0.2.53"}, Searches: []string{"corp.example"}, Options: []string{"edns0", "ndots:1"}}
	pod := func(policy api.DNSPolicy, hostNet bool, cfg *api.PodDNSConfig) *api.Pod {
		return &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}, Spec: api.PodSpec{DNSPolicy: policy, HostNetwork: hostNet, DNSConfig: cfg}}
	}
	two := "2"
	extra := &api.PodDNSConfig{
		Nameservers: []string{"198.18.9.9", "198.18.7.1"},
		Searches:    []string{"extra.example", "svc.cluster.local"},
		Options:     []api.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "rotate"}},
	}
	clusterSearch := []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local"}
	cluster := &runtime.DNS{Servers: []string{"198.18.7.1"}, Searches: append(clusterSearch, "corp.example"), Options: []string{"ndots:5"}}
	for _, tt := range []struct {
		name   string
		pod    *api.Pod
		server string
		want   *runtime.DNS
	}{
		{"unset", pod("", false, nil), "198.18.7.1", cluster},
		{"ClusterFirst", pod(api.DNSClusterFirst, false, nil), "198.18.7.1", cluster},
		{"ClusterFirstWithHostNet", pod(api.DNSClusterFirstWithHostNet, true, nil), "198.18.7.1", cluster},
		{"ClusterFirst on the host's network is Default", pod(api.DNSClusterFirst, true, nil), "198.18.7.1", nil},
		{"Default keeps the runtime's copy", pod(api.DNSDefault, false, nil), "198.18.7.1", nil},
		{"no cluster DNS is Default", pod(api.DNSClusterFirst, false, nil), "", nil},
		{"ClusterFirst with dnsConfig", pod(api.DNSClusterFirst, false, extra), "198.18.7.1", &runtime.DNS{
			Servers:  []string{"198.18.7.1", "198.18.9.9"},
			Searches: append(append([]string(nil), clusterSearch...), "corp.example", "extra.example"),
			Options:  []string{"ndots:2", "rotate"},
		}},
		{"Default with dnsConfig", pod(api.DNSDefault, false, extra), "198.18.7.1", &runtime.DNS{
			Servers:  []string{"192.0.2.53", "198.18.9.9", "198.18.7.1"},
			Searches: []string{"corp.example", "extra.example", "svc.cluster.local"},
			Options:  []string{"edns0", "ndots:2", "rotate"},
		}},
		{"None", pod(api.DNSNone, false, &api.PodDNSConfig{Nameservers: []string{"198.18.9.9"}, Searches: []string{"a.example"}}), "198.18.7.1", &runtime.DNS{
			Servers: []string{"198.18.9.9"}, Searches: []string{"a.example"},
		}},
		{"at most three servers", pod(api.DNSNone, false, &api.PodDNSConfig{Nameservers: []string{"198.18.9.1", "198.18.9.2", "198.18.9.3", "198.18.9.4"}}), "", &runtime.DNS{
			Servers: []string{"198.18.9.1", "198.18.9.2", "198.18.9.3"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := *node
			got, err := podDNS(tt.pod, tt.server, func() (*runtime.DNS, error) { return &n, nil })
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if _, err := podDNS(pod(api.DNSDefault, false, extra), "", func() (*runtime.DNS, error) { return nil, errors.New("no file") }); err == nil {
		t.Error("Default with dnsConfig and no node resolv.conf: no error")
	}
	// A node with no resolv.conf at all still serves ClusterFirst pods.
	got, err := podDNS(pod(api.DNSClusterFirst, false, nil), "198.18.7.1", func() (*runtime.DNS, error) { return readResolvConf("/nonexistent/resolv.conf") })
	if want := (&runtime.DNS{Servers: []string{"198.18.7.1"}, Searches: clusterSearch, Options: []string{"ndots:5"}}); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ClusterFirst without the node's resolv.conf: %+v, %v; want %+v", got, err, want)
	}
}

func TestParseResolvConf(t *testing.T) {
	got := parseResolvConf([]byte("# the node's\nnameserver 192.0.2.53\nnameserver 192.0.2.54 ; second\ndomain old.example\nsearch corp.example. . lab.example\noptions ndots:2 edns0\noptions ndots:3\n"))
	want := &runtime.DNS{Servers: []string{"192.0.2.53", "192.0.2.54"}, Searches: []string{"corp.example", "lab.example"}, Options: []string{"edns0", "ndots:3"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, want %+v", got, want)
	}
}

func TestFitSearches(t *testing.T) {
	var many []string
	for range 40 {
		many = append(many, strings.Repeat("a", 100))
	}
	got := fitSearches(many)
	if len(got) > maxDNSSearches || len(strings.Join(got, " ")) > maxDNSSearchLength {
		t.Errorf("%d searches of %d characters", len(got), len(strings.Join(got, " ")))
	}
}

func FuzzParseResolvConf(f *testing.F) {
	f.Add([]byte("nameserver 192.0.2.1\nsearch a b\noptions ndots:5\n"))
	f.Add([]byte("domain .\noptions :\n#\n;x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := parseResolvConf(b)
		for _, s := range append(append(append([]string(nil), d.Servers...), d.Searches...), d.Options...) {
			if s == "" || strings.ContainsAny(s, " \t\n#;") {
				t.Fatalf("field %q from %q", s, b)
			}
		}
	})
}
