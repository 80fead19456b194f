package api

import (
	"strings"
	"testing"
	"unsafe"
)

// fresh returns a copy of s in memory of its own, as a decoder makes.
func fresh(s string) string { return strings.Clone(s) }

func TestInternPodStatus(t *testing.T) {
	status := func() *PodStatus {
		return &PodStatus{
			Phase: PodPhase(fresh("Running")), HostIP: fresh("10.0.0.1"), PodIP: fresh("10.1.0.7"), QOSClass: QOSClass(fresh("Burstable")),
			PodIPs:     []PodIP{{IP: fresh("10.1.0.7")}},
			Conditions: []PodCondition{{Type: PodConditionType(fresh("Ready")), Status: ConditionStatus(fresh("True")), Message: fresh("a message")}},
			ContainerStatuses: []ContainerStatus{{
				Name: fresh("app"), Image: fresh("web:1"), ImageID: fresh("sha256:ab"), ContainerID: fresh("exec://1"),
				LastState: ContainerState{Terminated: &ContainerStateTerminated{Reason: fresh("Error")}},
			}},
		}
	}
	a, b := status(), status()
	InternPodStatus(a)
	InternPodStatus(b)
	same := func(what, x, y string) {
		t.Helper()
		if x != y {
			t.Fatalf("%s changed: %q, %q", what, x, y)
		}
		if unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: two copies of %q", what, x)
		}
	}
	same("phase", string(a.Phase), string(b.Phase))
	same("host IP", a.HostIP, b.HostIP)
	same("QoS class", string(a.QOSClass), string(b.QOSClass))
	same("condition type", string(a.Conditions[0].Type), string(b.Conditions[0].Type))
	same("condition status", string(a.Conditions[0].Status), string(b.Conditions[0].Status))
	same("container name", a.ContainerStatuses[0].Name, b.ContainerStatuses[0].Name)
	same("image", a.ContainerStatuses[0].Image, b.ContainerStatuses[0].Image)
	same("image ID", a.ContainerStatuses[0].ImageID, b.ContainerStatuses[0].ImageID)
	same("last state reason", a.ContainerStatuses[0].LastState.Terminated.Reason, b.ContainerStatuses[0].LastState.Terminated.Reason)
	if unsafe.StringData(a.PodIPs[0].IP) != unsafe.StringData(a.PodIP) {
		t.Error("podIPs[0] keeps a copy of podIP of its own")
	}
	// What is a pod's own is left as it was.
	if unsafe.StringData(a.PodIP) == unsafe.StringData(b.PodIP) || unsafe.StringData(a.Conditions[0].Message) == unsafe.StringData(b.Conditions[0].Message) {
		t.Error("a pod's own strings were interned")
	}
}
