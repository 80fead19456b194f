package api

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestValidateClaimUpdate: a claim's storage request may grow, never
// shrink, and the rest of its spec is fixed, in Kubernetes' words.
func TestValidateClaimUpdate(t *testing.T) {
	old := &PersistentVolumeClaim{ObjectMeta: meta("data"), Spec: PersistentVolumeClaimSpec{
		AccessModes: []PersistentVolumeAccessMode{ReadWriteOnce},
		Resources:   VolumeResourceRequirements{Requests: ResourceList{ResourceStorage: resource.MustParse("2Gi")}},
		VolumeName:  "pvc-1",
	}}
	Default(old)
	tests := []struct {
		name   string
		change func(*PersistentVolumeClaim)
		want   []string
	}{
		{"unchanged", func(*PersistentVolumeClaim) {}, nil},
		{"grown", func(c *PersistentVolumeClaim) { c.Spec.Resources.Requests[ResourceStorage] = resource.MustParse("3Gi") }, nil},
		{"same size, other units", func(c *PersistentVolumeClaim) {
			c.Spec.Resources.Requests[ResourceStorage] = resource.MustParse("2048Mi")
		}, nil},
		{"shrunk", func(c *PersistentVolumeClaim) { c.Spec.Resources.Requests[ResourceStorage] = resource.MustParse("1Gi") },
			[]string{"spec.resources.requests.storage: Forbidden: field can not be less than previous value"}},
		{"access modes", func(c *PersistentVolumeClaim) { c.Spec.AccessModes = []PersistentVolumeAccessMode{ReadWriteMany} },
			[]string{"spec: Forbidden: spec is immutable after creation except resources.requests"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := old.DeepCopy()
			tt.change(c)
			checkErrors(t, ValidateUpdate(old, c), tt.want)
		})
	}
}

// TestValidatePodUpdateInteractive: a container's stdin, stdinOnce and tty
// are fixed once the pod exists, as in Kubernetes: its process was
// started with them.
func TestValidatePodUpdateInteractive(t *testing.T) {
	old := validPod()
	old.Spec.Containers[0].Stdin = true
	Default(old)
	forbidden := []string{"spec: Forbidden: pod updates may not change fields other than"}
	for _, tt := range []struct {
		name   string
		change func(*Container)
		want   []string
	}{
		{"image", func(c *Container) { c.Image = "busybox:2" }, nil},
		{"stdin", func(c *Container) { c.Stdin = false }, forbidden},
		{"stdinOnce", func(c *Container) { c.StdinOnce = true }, forbidden},
		{"tty", func(c *Container) { c.TTY = true }, forbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := old.DeepCopy()
			tt.change(&p.Spec.Containers[0])
			checkErrors(t, ValidateUpdate(old, p), tt.want)
		})
	}
}

// TestValidatePodUpdateSchedulingGates: gates may be removed, never
// added, and a pod with gates may not name a node, in Kubernetes' words.
func TestValidatePodUpdateSchedulingGates(t *testing.T) {
	old := validPod()
	old.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}, {Name: "example.com/b"}}
	Default(old)
	for _, tt := range []struct {
		name  string
		gates []string
		want  []string
	}{
		{"unchanged", []string{"example.com/a", "example.com/b"}, nil},
		{"one removed", []string{"example.com/b"}, nil},
		{"all removed", nil, nil},
		{"one added", []string{"example.com/a", "example.com/c"},
			[]string{"spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/c'"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := old.DeepCopy()
			p.Spec.SchedulingGates = nil
			for _, g := range tt.gates {
				p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
			}
			checkErrors(t, ValidateUpdate(old, p), tt.want)
		})
	}
	bound := old.DeepCopy()
	bound.Spec.NodeName = "n1"
	checkErrors(t, Validate(bound), []string{"spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"})
}
