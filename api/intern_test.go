package api

import (
	"errors"
	"hash/maphash"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/berth-dev/berth/testtool"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	b.Conditions[0].Message = fresh("another message")
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

// Equal condition lists share one copy, which lives as long as a status
// refers to it; a list that differs in anything keeps its own.
func TestInternConditions(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	list := func(ready ConditionStatus) []PodCondition {
		return []PodCondition{
			{Type: PodScheduled, Status: ConditionTrue, LastTransitionTime: metav1.NewTime(at)},
			{Type: PodReady, Status: ready, LastTransitionTime: metav1.NewTime(at.Add(time.Second)), Reason: fresh("Started")},
		}
	}
	a := &PodStatus{Conditions: list(ConditionTrue)}
	b := &PodStatus{Conditions: list(ConditionTrue)}
	c := &PodStatus{Conditions: list(ConditionFalse)}
	for _, st := range []*PodStatus{a, b, c} {
		InternPodStatus(st)
	}
	if &a.Conditions[0] != &b.Conditions[0] {
		t.Error("equal condition lists kept two copies")
	}
	if &a.Conditions[0] == &c.Conditions[0] {
		t.Error("lists that differ share one copy")
	}
	if !reflect.DeepEqual(a.Conditions, list(ConditionTrue)) || !reflect.DeepEqual(c.Conditions, list(ConditionFalse)) {
		t.Errorf("interning changed the conditions: %+v, %+v", a.Conditions, c.Conditions)
	}
	if cap(a.Conditions) != len(a.Conditions) {
		t.Errorf("a shared list has room to append into: len %d, cap %d", len(a.Conditions), cap(a.Conditions))
	}
	// Too many conditions to share: left as they are.
	long := make([]PodCondition, maxSharedConditions+1)
	if got := internConditions(long); &got[0] != &long[0] {
		t.Error("a list too long to share was copied")
	}

	// A list whose hash another list holds keeps its own copy.
	other := list(ConditionUnknown)
	var k conditionsKey
	k.n = copy(k.conds[:], other)
	h := maphash.Comparable(sharedConditions.seed, k)
	sharedConditions.Lock()
	held, had := sharedConditions.m[h]
	sharedConditions.m[h] = sharedList{first: weak.Make(&c.Conditions[0]), n: len(c.Conditions)}
	sharedConditions.Unlock()
	if got := internConditions(other); &got[0] != &other[0] || !reflect.DeepEqual(got, list(ConditionUnknown)) {
		t.Error("a list took the canonical copy of another with its hash")
	}
	sharedConditions.Lock()
	if had {
		sharedConditions.m[h] = held
	} else {
		delete(sharedConditions.m, h)
	}
	sharedConditions.Unlock()

	// Once no status refers to it the entry goes.
	k = conditionsKey{}
	k.n = copy(k.conds[:], list(ConditionTrue))
	h = maphash.Comparable(sharedConditions.seed, k)
	a, b = nil, nil
	testtool.WaitFor(t, 10*time.Second, "the entry of a list no status refers to gone", func() error {
		runtime.GC()
		sharedConditions.Lock()
		defer sharedConditions.Unlock()
		if _, ok := sharedConditions.m[h]; ok {
			return errors.New("entry still there")
		}
		return nil
	})
	runtime.KeepAlive(c)
}
