package api

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPodRequestsAndLimits(t *testing.T) {
	rl := func(cpu, mem string) ResourceList {
		l := ResourceList{}
		if cpu != "" {
			l[ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	spec := &PodSpec{
		Containers: []Container{
			{Resources: ResourceRequirements{Requests: rl("100m", "64Mi"), Limits: rl("200m", "")}},
			{Resources: ResourceRequirements{Requests: rl("150m", ""), Limits: rl("300m", "1Gi")}},
		},
		InitContainers: []Container{
			{Resources: ResourceRequirements{Requests: rl("1", "32Mi")}},                          // cpu above the sum: counts
			{Resources: ResourceRequirements{Requests: rl("", "128Mi"), Limits: rl("", "512Mi")}}, // memory above the sum: counts
		},
	}
	for _, tt := range []struct {
		name string
		got  ResourceList
		want ResourceList
	}{
		{"requests", PodRequests(spec), rl("1", "128Mi")},
		{"limits", PodLimits(spec), rl("500m", "1Gi")},
	} {
		if len(tt.got) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
		for name, q := range tt.want {
			if g, ok := tt.got[name]; !ok || g.Cmp(q) != 0 {
				t.Errorf("%s[%s] = %v, want %v", tt.name, name, tt.got[name], q.String())
			}
		}
	}
	if got := PodRequests(&PodSpec{}); len(got) != 0 {
		t.Errorf("no containers: %v, want nothing", got)
	}
}

func TestAddResourcesSharesNothing(t *testing.T) {
	add := ResourceList{ResourceCPU: resource.MustParse("1")}
	into := ResourceList{}
	AddResources(into, add)
	AddResources(into, add)
	if q := into[ResourceCPU]; q.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("1 + 1 = %v", q.String())
	}
	if q := add[ResourceCPU]; q.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("the added list changed: %v", q.String())
	}
}
