package table

import (
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
)

// TestEveryKindHasColumns keeps the definitions in step with the
// registry: a kind added to api must get its columns here.
func TestEveryKindHasColumns(t *testing.T) {
	for _, k := range api.Kinds() {
		cols, ok := definitions[k.GVK.Kind]
		if !ok {
			t.Errorf("%s has no column definitions", k)
			continue
		}
		names := 0
		for _, c := range cols {
			if c.cell == nil {
				t.Errorf("%s column %q has no cell function", k, c.Name)
			}
			if c.Format == "name" && c.Priority == 0 {
				names++
			}
		}
		if k.GVK.Kind != "Event" && names != 1 {
			t.Errorf("%s has %d name columns, want 1", k, names)
		}
	}
	for kind := range definitions {
		if _, ok := api.KindNamed(kind); !ok {
			t.Errorf("definitions hold %q, which is not a registered kind", kind)
		}
	}
}

func TestHeaders(t *testing.T) {
	tests := []struct {
		resource string
		wide     bool
		want     string
	}{
		{"pods", false, "NAME READY STATUS RESTARTS AGE"},
		{"pods", true, "NAME READY STATUS RESTARTS AGE IP NODE"},
		{"nodes", false, "NAME STATUS ROLES AGE VERSION"},
		{"nodes", true, "NAME STATUS ROLES AGE VERSION INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME"},
		{"services", false, "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE"},
		{"endpoints", false, "NAME ENDPOINTS AGE"},
		{"deployments", false, "NAME READY UP-TO-DATE AVAILABLE AGE"},
		{"replicasets", false, "NAME DESIRED CURRENT READY AGE"},
		{"replicationcontrollers", false, "NAME DESIRED CURRENT READY AGE"},
		{"pvc", false, "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS AGE"},
		{"pv", false, "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS AGE"},
		{"storageclasses", false, "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE"},
		{"namespaces", false, "NAME STATUS AGE"},
		{"configmaps", false, "NAME DATA AGE"},
		{"secrets", false, "NAME TYPE DATA AGE"},
		{"serviceaccounts", false, "NAME SECRETS AGE"},
		{"resourcequotas", false, "NAME AGE REQUEST LIMIT"},
		{"events", false, "LAST SEEN TYPE REASON OBJECT MESSAGE"},
		{"sources", false, "NAME TYPE REVISION READY HEALTH MESSAGE"},
	}
	for _, tt := range tests {
		k, ok := api.LookupResource(tt.resource)
		if !ok {
			t.Fatalf("no kind %q", tt.resource)
		}
		if got := strings.Join(Headers(k, tt.wide), " "); got != tt.want {
			t.Errorf("Headers(%s, wide=%v) = %q, want %q", tt.resource, tt.wide, got, tt.want)
		}
	}
}

func TestShortRevision(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"3f2a9c1e0b7d4a5f8e6c2b1a0d9f8e7c6b5a4d3e", "3f2a9c1e0b7d"},
		{"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "sha256:9f86d081884c"},
		{"main@sha1:abc", "main@sha1:abc"},
		{"not-a-hash-but-long-enough", "not-a-hash-but-long-enough"},
	}
	for _, tt := range tests {
		if got := ShortRevision(tt.in); got != tt.want {
			t.Errorf("ShortRevision(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatEndpoints(t *testing.T) {
	ep := &api.Endpoints{Subsets: []api.EndpointSubset{
		{
			Addresses: []api.EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}},
			Ports:     []api.EndpointPort{{Name: "http", Port: 80}, {Name: "dns", Port: 53}},
		},
		{NotReadyAddresses: []api.EndpointAddress{{IP: "10.0.0.9"}}, Ports: []api.EndpointPort{{Name: "http", Port: 80}}},
	}}
	if got, want := FormatEndpoints(ep, nil), "10.0.0.1:80,10.0.0.2:80,10.0.0.1:53 + 1 more..."; got != want {
		t.Errorf("FormatEndpoints = %q, want %q", got, want)
	}
	if got, want := FormatEndpoints(ep, map[string]bool{"dns": true}), "10.0.0.1:53,10.0.0.2:53"; got != want {
		t.Errorf("FormatEndpoints(dns) = %q, want %q", got, want)
	}
	headless := &api.Endpoints{Subsets: []api.EndpointSubset{{Addresses: []api.EndpointAddress{{IP: "fd00::1"}}}}}
	if got, want := FormatEndpoints(headless, nil), "fd00::1"; got != want {
		t.Errorf("FormatEndpoints(headless) = %q, want %q", got, want)
	}
}

func TestNodeStatusAndRoles(t *testing.T) {
	n := &api.Node{}
	if got := nodeStatus(n); got != "Unknown" {
		t.Errorf("no conditions: %q, want Unknown", got)
	}
	n.Status.Conditions = []api.NodeCondition{{Type: api.NodeMemoryPressure, Status: api.ConditionFalse}, {Type: api.NodeReady, Status: api.ConditionUnknown}}
	n.Spec.Unschedulable = true
	if got := nodeStatus(n); got != "NotReady,SchedulingDisabled" {
		t.Errorf("Ready=Unknown, cordoned: %q", got)
	}
	n.Labels = map[string]string{
		"node-role.kubernetes.io/control-plane": "",
		"node-role.kubernetes.io/worker":        "true",
		"node-role.kubernetes.io/":              "ignored",
		"kubernetes.io/role":                    "worker",
	}
	if got := strings.Join(NodeRoles(n), ","); got != "control-plane,worker" {
		t.Errorf("roles = %q", got)
	}
}
