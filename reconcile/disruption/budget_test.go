package disruption

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
)

var epoch = time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)

func count(v intstr.IntOrString) *intstr.IntOrString { return &v }

// owned is a pod of a controller (by UID); ready says its Ready condition.
func owned(name, controller string, ready bool) *api.Pod {
	yes := true
	p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": "web"}}}
	if controller != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: controller, UID: types.UID(controller), Controller: &yes}}
	}
	status := api.ConditionFalse
	if ready {
		status = api.ConditionTrue
	}
	p.Status = api.PodStatus{Phase: api.PodRunning, Conditions: []api.PodCondition{{Type: api.PodReady, Status: status}}}
	return p
}

// scales answers for the controllers named in it.
func scales(m map[string]int32) scaleFunc {
	return func(_ string, ref *metav1.OwnerReference) (types.UID, int32, bool) {
		n, ok := m[ref.Name]
		return ref.UID, n, ok
	}
}

func TestExpectedPods(t *testing.T) {
	three := []*api.Pod{owned("a", "rs1", true), owned("b", "rs1", true), owned("c", "rs2", false)}
	tests := []struct {
		name              string
		spec              api.PodDisruptionBudgetSpec
		pods              []*api.Pod
		scale             map[string]int32
		expected, desired int32
		unmanaged         []string
		wantErr           bool
	}{
		{name: "integer minAvailable counts the pods", spec: api.PodDisruptionBudgetSpec{MinAvailable: count(intstr.FromInt32(2))},
			pods: three, expected: 3, desired: 2},
		{name: "integer minAvailable needs no controller", spec: api.PodDisruptionBudgetSpec{MinAvailable: count(intstr.FromInt32(1))},
			pods: []*api.Pod{owned("a", "", true)}, expected: 1, desired: 1},
		{name: "percentage of the controllers' replicas, each once", spec: api.PodDisruptionBudgetSpec{MinAvailable: count(intstr.FromString("50%"))},
			pods: three, scale: map[string]int32{"rs1": 4, "rs2": 1}, expected: 5, desired: 3},
		{name: "percentage rounds up", spec: api.PodDisruptionBudgetSpec{MinAvailable: count(intstr.FromString("34%"))},
			pods: three, scale: map[string]int32{"rs1": 2, "rs2": 1}, expected: 3, desired: 2},
		{name: "maxUnavailable from replicas", spec: api.PodDisruptionBudgetSpec{MaxUnavailable: count(intstr.FromInt32(1))},
			pods: three, scale: map[string]int32{"rs1": 2, "rs2": 1}, expected: 3, desired: 2},
		{name: "maxUnavailable percentage rounds up", spec: api.PodDisruptionBudgetSpec{MaxUnavailable: count(intstr.FromString("25%"))},
			pods: three, scale: map[string]int32{"rs1": 4, "rs2": 1}, expected: 5, desired: 3},
		{name: "maxUnavailable over the replicas desires none", spec: api.PodDisruptionBudgetSpec{MaxUnavailable: count(intstr.FromInt32(9))},
			pods: three, scale: map[string]int32{"rs1": 2, "rs2": 1}, expected: 3, desired: 0},
		{name: "unmanaged pods are named and not counted", spec: api.PodDisruptionBudgetSpec{MaxUnavailable: count(intstr.FromInt32(1))},
			pods: append([]*api.Pod{owned("bare", "", true)}, three...), scale: map[string]int32{"rs1": 2, "rs2": 1}, expected: 3, desired: 2, unmanaged: []string{"bare"}},
		{name: "a missing controller is an error", spec: api.PodDisruptionBudgetSpec{MinAvailable: count(intstr.FromString("50%"))},
			pods: three, scale: map[string]int32{"rs1": 2}, wantErr: true},
		{name: "no count desires nothing", pods: three},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &api.PodDisruptionBudget{Spec: tc.spec}
			expected, desired, unmanaged, err := expectedPods(b, tc.pods, scales(tc.scale))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if expected != tc.expected || desired != tc.desired || !slices.Equal(unmanaged, tc.unmanaged) {
				t.Fatalf("expected %d desired %d unmanaged %v, want %d %d %v", expected, desired, unmanaged, tc.expected, tc.desired, tc.unmanaged)
			}
		})
	}
}

func TestDisruptedPodsAndHealth(t *testing.T) {
	now := epoch.Add(time.Hour)
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	deleting := owned("d", "rs1", true)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	pods := []*api.Pod{owned("fresh", "rs1", true), owned("stale", "rs1", true), owned("unready", "rs1", false), owned("plain", "rs1", true), deleting}
	b := &api.PodDisruptionBudget{Status: api.PodDisruptionBudgetStatus{DisruptedPods: map[string]metav1.Time{
		"fresh": at(30 * time.Second), "stale": at(DeletionTimeout + time.Second), "d": at(time.Second), "gone": at(time.Second),
	}}}
	kept, expired, recheck := disruptedPods(b, pods, now)
	if len(kept) != 1 || !kept["fresh"].Time.Equal(now.Add(-30*time.Second)) {
		t.Fatalf("kept %v, want fresh alone", kept)
	}
	if !slices.Equal(expired, []string{"stale"}) {
		t.Fatalf("expired %v, want stale", expired)
	}
	if want := now.Add(-30 * time.Second).Add(DeletionTimeout); !recheck.Equal(want) {
		t.Fatalf("recheck %v, want %v", recheck, want)
	}
	// fresh is about to go, unready is not ready, d is being deleted:
	// stale (expired, so back) and plain count.
	if got := countHealthy(pods, kept, now); got != 2 {
		t.Fatalf("healthy %d, want 2", got)
	}
	if k, e, r := disruptedPods(&api.PodDisruptionBudget{}, pods, now); len(k) != 0 || e != nil || !r.IsZero() {
		t.Fatalf("no entries: kept %v expired %v recheck %v", k, e, r)
	}
}

func TestDisruptionsAllowed(t *testing.T) {
	for _, tc := range []struct{ healthy, desired, expected, want int32 }{
		{3, 2, 3, 1},
		{2, 2, 2, 0},
		{1, 2, 2, 0},
		{5, 0, 5, 5},
		{3, 0, 0, 0}, // no pod expected yet: safe
	} {
		if got := disruptionsAllowed(tc.healthy, tc.desired, tc.expected); got != tc.want {
			t.Errorf("disruptionsAllowed(%d, %d, %d) = %d, want %d", tc.healthy, tc.desired, tc.expected, got, tc.want)
		}
	}
}
