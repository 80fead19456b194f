package api

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPodQOSClass(t *testing.T) {
	rl := func(kv ...string) ResourceList {
		l := ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	c := func(req, lim ResourceList) Container {
		return Container{Name: "c", Resources: ResourceRequirements{Requests: req, Limits: lim}}
	}
	full := rl("cpu", "500m", "memory", "128Mi")
	tests := []struct {
		name string
		init []Container
		cs   []Container
		want QOSClass
	}{
		{"nothing set", nil, []Container{c(nil, nil)}, QOSBestEffort},
		{"only ephemeral storage", nil, []Container{c(rl("ephemeral-storage", "1Gi"), nil)}, QOSBestEffort},
		{"zero requests count as unset", nil, []Container{c(rl("cpu", "0", "memory", "0"), nil)}, QOSBestEffort},
		{"requests equal limits", nil, []Container{c(full, full)}, QOSGuaranteed},
		{"limits only stand for requests", nil, []Container{c(nil, full)}, QOSGuaranteed},
		{"same value other unit", nil, []Container{c(rl("cpu", "0.5", "memory", "128Mi"), full)}, QOSGuaranteed},
		{"request below limit", nil, []Container{c(rl("cpu", "100m", "memory", "128Mi"), full)}, QOSBurstable},
		{"cpu limit only", nil, []Container{c(nil, rl("cpu", "1"))}, QOSBurstable},
		{"memory request only", nil, []Container{c(rl("memory", "1Gi"), nil)}, QOSBurstable},
		{"one guaranteed one best effort", nil, []Container{c(full, full), c(nil, nil)}, QOSBurstable},
		{"init container best effort breaks guaranteed", []Container{c(nil, nil)}, []Container{c(full, full)}, QOSBurstable},
		{"init container alone has requests", []Container{c(rl("cpu", "1"), nil)}, []Container{c(nil, nil)}, QOSBurstable},
		{"all guaranteed with init", []Container{c(full, full)}, []Container{c(full, full)}, QOSGuaranteed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Pod{Spec: PodSpec{InitContainers: tt.init, Containers: tt.cs}}
			if got := PodQOSClass(p); got != tt.want {
				t.Errorf("PodQOSClass = %s, want %s", got, tt.want)
			}
		})
	}
}
