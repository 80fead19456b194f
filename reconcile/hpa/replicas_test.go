package hpa

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// calcPod is a pod of 100m requested: ready (started an hour ago),
// pending, unready, or deleted.
func calcPod(name, state string, now time.Time) *api.Pod {
	started := metav1.NewTime(now.Add(-time.Hour))
	p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "app",
			Resources: api.ResourceRequirements{Requests: api.ResourceList{api.ResourceCPU: resource.MustParse("100m")}}}}},
		Status: api.PodStatus{Phase: api.PodRunning, StartTime: &started,
			Conditions: []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue, LastTransitionTime: started}}}}
	switch state {
	case "pending":
		p.Status.Phase = api.PodPending
	case "new-unready":
		// Started within the initialisation period and not ready.
		recent := metav1.NewTime(now.Add(-time.Minute))
		p.Status.StartTime = &recent
		p.Status.Conditions[0] = api.PodCondition{Type: api.PodReady, Status: api.ConditionFalse, LastTransitionTime: recent}
	case "deleted":
		p.DeletionTimestamp = &started
	}
	return p
}

// TestResourceReplicas checks Kubernetes' replica arithmetic for a cpu
// utilization target of 50%, tolerance 0.1.
func TestResourceReplicas(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	calc := calculator{cpuInitializationPeriod: DefaultCPUInitializationPeriod, initialReadinessDelay: DefaultInitialReadinessDelay, now: now}
	tol := tolerances{down: 0.1, up: 0.1}
	for _, c := range []struct {
		name    string
		states  []string
		usage   []int64 // millicores per pod, -1 for no sample
		current int32
		want    int32
		err     string
	}{
		{"double", []string{"", ""}, []int64{100, 100}, 2, 4, ""},
		{"within tolerance", []string{"", ""}, []int64{54, 54}, 2, 2, ""},
		{"just outside", []string{"", ""}, []int64{56, 56}, 2, 3, ""},
		{"halve", []string{"", "", "", ""}, []int64{25, 25, 25, 25}, 4, 2, ""},
		// An unready pod counts as 0 on a scale up: (200+200+0)/300 = 133%.
		{"unready on scale up", []string{"", "", "new-unready"}, []int64{200, 200, 200}, 3, 8, ""},
		// A pending pod counts as 0 too, and a missing sample on a scale
		// down as its request: (10+10+100)/300 = 40% → 3 × 0.8 → 3.
		{"missing on scale down", []string{"", "", ""}, []int64{10, 10, -1}, 3, 3, ""},
		{"deleted ignored", []string{"", "", "deleted"}, []int64{100, 100, 900}, 3, 4, ""},
		{"no pods", nil, nil, 2, 0, "no pods returned by selector while calculating replica count"},
		{"no samples", []string{"pending"}, []int64{-1}, 1, 0, "did not receive metrics for targeted pods (pods might be unready)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pods []*api.Pod
			usage := map[string]PodUsage{}
			for i, st := range c.states {
				name := fmt.Sprintf("p%d", i)
				pods = append(pods, calcPod(name, st, now))
				if c.usage[i] >= 0 {
					usage[name] = PodUsage{Timestamp: now, Window: 10 * time.Second,
						Containers: map[string]api.ResourceList{"app": {api.ResourceCPU: *resource.NewMilliQuantity(c.usage[i], resource.DecimalSI)}}}
				}
			}
			got, _, _, err := calc.resourceReplicas(c.current, 50, api.ResourceCPU, "", pods, usage, tol)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err %v, want %s", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %d %v, want %d", got, err, c.want)
			}
		})
	}
}

// TestLegacyScaleUpLimit: without a behaviour a scale up is at most
// double, or 4.
func TestLegacyScaleUpLimit(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var h history
	v := h.normalize(now, 5*time.Minute, 2, 9, 1, 10)
	if v.replicas != 4 || !v.limited || v.limitedReason != reasonScaleUpLimit {
		t.Fatalf("%+v", v)
	}
	v = h.normalize(now, 5*time.Minute, 2, 20, 1, 3)
	if v.replicas != 3 || v.limitedReason != reasonTooManyReplicas {
		t.Fatalf("%+v", v)
	}
}
