package workload

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type rankPod struct {
	name     string
	node     string
	phase    api.PodPhase
	ready    bool
	readyAt  int // seconds after epoch
	restarts int32
	created  int // seconds after epoch; -1 for unset
}

func (rp rankPod) pod() *api.Pod {
	p := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: rp.name}}
	p.Spec.NodeName = rp.node
	p.Status.Phase = rp.phase
	if rp.created >= 0 {
		p.CreationTimestamp = metav1.NewTime(epoch.Add(time.Duration(rp.created) * time.Second))
	}
	status := api.ConditionFalse
	if rp.ready {
		status = api.ConditionTrue
	}
	p.Status.Conditions = []api.PodCondition{{
		Type: api.PodReady, Status: status,
		LastTransitionTime: metav1.NewTime(epoch.Add(time.Duration(rp.readyAt) * time.Second)),
	}}
	p.Status.ContainerStatuses = []api.ContainerStatus{{Name: "c", RestartCount: rp.restarts}}
	return p
}

func TestRankForDeletion(t *testing.T) {
	tests := []struct {
		name string
		pods []rankPod
		want []string
	}{
		{
			name: "unscheduled before scheduled",
			pods: []rankPod{
				{name: "bound", node: "n1", phase: api.PodPending},
				{name: "unbound", phase: api.PodPending},
			},
			want: []string{"unbound", "bound"},
		},
		{
			name: "pending before unknown before running",
			pods: []rankPod{
				{name: "running", node: "n1", phase: api.PodRunning},
				{name: "unknown", node: "n1", phase: api.PodUnknown},
				{name: "pending", node: "n1", phase: api.PodPending},
			},
			want: []string{"pending", "unknown", "running"},
		},
		{
			name: "not ready before ready",
			pods: []rankPod{
				{name: "ready", node: "n1", phase: api.PodRunning, ready: true},
				{name: "not-ready", node: "n1", phase: api.PodRunning},
			},
			want: []string{"not-ready", "ready"},
		},
		{
			name: "ready for less time first",
			pods: []rankPod{
				{name: "old-ready", node: "n1", phase: api.PodRunning, ready: true, readyAt: 10},
				{name: "new-ready", node: "n1", phase: api.PodRunning, ready: true, readyAt: 50},
			},
			want: []string{"new-ready", "old-ready"},
		},
		{
			name: "more restarts first",
			pods: []rankPod{
				{name: "calm", node: "n1", phase: api.PodRunning, restarts: 0},
				{name: "crashy", node: "n1", phase: api.PodRunning, restarts: 4},
			},
			want: []string{"crashy", "calm"},
		},
		{
			name: "more recently created first, unset newest",
			pods: []rankPod{
				{name: "old", node: "n1", phase: api.PodRunning, created: 1},
				{name: "new", node: "n1", phase: api.PodRunning, created: 100},
				{name: "unset", node: "n1", phase: api.PodRunning, created: -1},
			},
			want: []string{"unset", "new", "old"},
		},
		{
			name: "the whole order",
			pods: []rankPod{
				{name: "ready-long", node: "n1", phase: api.PodRunning, ready: true, readyAt: 1},
				{name: "running-not-ready", node: "n1", phase: api.PodRunning},
				{name: "pending-bound", node: "n1", phase: api.PodPending},
				{name: "ready-short", node: "n1", phase: api.PodRunning, ready: true, readyAt: 9},
				{name: "unscheduled", phase: api.PodPending},
			},
			want: []string{"unscheduled", "pending-bound", "running-not-ready", "ready-short", "ready-long"},
		},
		{
			name: "ties keep a stable order by name",
			pods: []rankPod{{name: "b", phase: api.PodPending}, {name: "a", phase: api.PodPending}},
			want: []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []*api.Pod
			for _, rp := range tt.pods {
				pods = append(pods, rp.pod())
			}
			before := slices.Clone(pods)
			var got []string
			for _, p := range RankForDeletion(pods) {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if !slices.Equal(before, pods) {
				t.Error("RankForDeletion reordered its input")
			}
		})
	}
}
