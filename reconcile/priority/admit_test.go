package priority

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

func newStore(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.New(store.Memory{}, store.Options{Admit: []store.AdmitFunc{Admit}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := Bootstrap(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func class(name string, value int32, globalDefault bool, policy api.PreemptionPolicy) *api.PriorityClass {
	pc := &api.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: globalDefault}
	if policy != "" {
		pc.PreemptionPolicy = &policy
	}
	api.Default(pc)
	return pc
}

func pod(name, className string, change ...func(*api.Pod)) *api.Pod {
	p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: api.PodSpec{PriorityClassName: className, Containers: []api.Container{{Name: "c", Image: "busybox"}}}}
	for _, c := range change {
		c(p)
	}
	return p
}

func created(t *testing.T, s *store.Store, obj api.Object) api.Object {
	t.Helper()
	out, err := s.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func refused(t *testing.T, s *store.Store, obj api.Object, want string) {
	t.Helper()
	_, err := s.Create(context.Background(), obj)
	if err == nil || !store.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want forbidden: %q", err, want)
	}
}

func priorityOf(p *api.Pod) (int32, api.PreemptionPolicy) {
	var v int32
	var pp api.PreemptionPolicy
	if p.Spec.Priority != nil {
		v = *p.Spec.Priority
	}
	if p.Spec.PreemptionPolicy != nil {
		pp = *p.Spec.PreemptionPolicy
	}
	return v, pp
}

// Pods get their class's priority and policy at creation, as Kubernetes'
// Priority admission gives them, with its refusals word for word.
func TestPodPriorityAdmission(t *testing.T) {
	s := newStore(t)
	p := created(t, s, pod("plain", "")).(*api.Pod)
	if v, pp := priorityOf(p); v != 0 || pp != api.PreemptLowerPriority || p.Spec.PriorityClassName != "" {
		t.Fatalf("without classes: %d %q %q", v, pp, p.Spec.PriorityClassName)
	}
	p = created(t, s, pod("critical", api.SystemNodeCritical)).(*api.Pod)
	if v, _ := priorityOf(p); v != 2000001000 {
		t.Fatalf("system-node-critical: %d", v)
	}
	created(t, s, class("high", 1000, false, ""))
	created(t, s, class("batch", 10, true, api.PreemptNever))
	p = created(t, s, pod("high", "high")).(*api.Pod)
	if v, pp := priorityOf(p); v != 1000 || pp != api.PreemptLowerPriority {
		t.Fatalf("high: %d %q", v, pp)
	}
	p = created(t, s, pod("defaulted", "")).(*api.Pod)
	if v, pp := priorityOf(p); v != 10 || pp != api.PreemptNever || p.Spec.PriorityClassName != "batch" {
		t.Fatalf("global default: %d %q %q", v, pp, p.Spec.PriorityClassName)
	}
	refused(t, s, pod("missing", "nope"), "no PriorityClass with name nope was found")
	refused(t, s, pod("wrong", "high", func(p *api.Pod) { v := int32(5); p.Spec.Priority = &v }),
		"the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name")
	refused(t, s, pod("never", "high", func(p *api.Pod) { v := api.PreemptNever; p.Spec.PreemptionPolicy = &v }),
		"the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name")
	same := created(t, s, pod("same", "high", func(p *api.Pod) { v := int32(1000); p.Spec.Priority = &v })).(*api.Pod)
	if v, _ := priorityOf(same); v != 1000 {
		t.Fatalf("the class's own value: %d", v)
	}

	// An update that leaves the priority out keeps it.
	upd := p.DeepCopy()
	upd.Spec.Priority, upd.Spec.PreemptionPolicy = nil, nil
	out, err := s.Update(context.Background(), upd)
	if err != nil {
		t.Fatal(err)
	}
	if v, pp := priorityOf(out.(*api.Pod)); v != 10 || pp != api.PreemptNever {
		t.Fatalf("after update: %d %q", v, pp)
	}
}

// At most one class is the global default.
func TestOneGlobalDefault(t *testing.T) {
	s := newStore(t)
	created(t, s, class("first", 10, true, ""))
	refused(t, s, class("second", 20, true, ""), "PriorityClass first is already marked as default. Only one default can exist")
	created(t, s, class("third", 20, false, ""))
	obj, err := s.Get(classKind, "", "first")
	if err != nil {
		t.Fatal(err)
	}
	again := obj.(*api.PriorityClass).DeepCopy()
	again.Description = "still the default"
	if _, err := s.Update(context.Background(), again); err != nil {
		t.Fatalf("updating the default itself: %v", err)
	}
}
