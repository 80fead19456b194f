package podgc

import (
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// pod is a pod named name, created age before epoch, in phase on node.
func pod(name string, age time.Duration, phase api.PodPhase, node string) *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: metav1.NewTime(epoch.Add(-age))},
		Spec:       api.PodSpec{NodeName: node},
		Status:     api.PodStatus{Phase: phase},
	}
}

func names(ps []*api.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestSelectTerminated(t *testing.T) {
	pods := []*api.Pod{
		pod("new-done", time.Minute, api.PodSucceeded, "n1"),
		pod("old-failed", time.Hour, api.PodFailed, "n1"),
		pod("running", 2*time.Hour, api.PodRunning, "n1"),
		pod("pending", 3*time.Hour, api.PodPending, ""),
		pod("mid-done", 10*time.Minute, api.PodSucceeded, "n2"),
		pod("b-tie", 30*time.Minute, api.PodSucceeded, "n2"),
		pod("a-tie", 30*time.Minute, api.PodFailed, "n2"),
	}
	tests := []struct {
		threshold int
		want      []string
	}{
		{threshold: 0},
		{threshold: -1},
		{threshold: 5},
		{threshold: 10},
		{threshold: 4, want: []string{"old-failed"}},
		{threshold: 2, want: []string{"old-failed", "a-tie", "b-tie"}},
		{threshold: 1, want: []string{"old-failed", "a-tie", "b-tie", "mid-done"}},
	}
	for _, tc := range tests {
		if got := names(selectTerminated(pods, tc.threshold)); !slices.Equal(got, tc.want) {
			t.Errorf("threshold %d: deletes %v, want %v", tc.threshold, got, tc.want)
		}
	}
}

func TestSelectOrphans(t *testing.T) {
	q := 40 * time.Second
	tests := []struct {
		name      string
		pods      []*api.Pod
		nodes     []string
		since     map[string]time.Time
		want      []string
		wantSince map[string]time.Time
	}{
		{
			name:  "bound to existing nodes or not bound: kept",
			pods:  []*api.Pod{pod("a", 0, api.PodRunning, "n1"), pod("b", 0, api.PodPending, "")},
			nodes: []string{"n1"},
		},
		{
			name:      "node first seen missing: quarantined",
			pods:      []*api.Pod{pod("a", 0, api.PodRunning, "gone")},
			wantSince: map[string]time.Time{"gone": epoch},
		},
		{
			name:      "missing for 39s: still quarantined",
			pods:      []*api.Pod{pod("a", 0, api.PodRunning, "gone")},
			since:     map[string]time.Time{"gone": epoch.Add(-39 * time.Second)},
			wantSince: map[string]time.Time{"gone": epoch.Add(-39 * time.Second)},
		},
		{
			name: "missing for 40s: every pod of it, finished or terminating too",
			pods: []*api.Pod{pod("a", 0, api.PodRunning, "gone"), pod("b", 0, api.PodSucceeded, "gone"),
				func() *api.Pod {
					p := pod("c", 0, api.PodRunning, "gone")
					p.DeletionTimestamp = &metav1.Time{Time: epoch}
					return p
				}(), pod("d", 0, api.PodRunning, "n1")},
			nodes:     []string{"n1"},
			since:     map[string]time.Time{"gone": epoch.Add(-40 * time.Second)},
			want:      []string{"a", "b", "c"},
			wantSince: map[string]time.Time{"gone": epoch.Add(-40 * time.Second)},
		},
		{
			name:  "node registered during the quarantine: forgotten",
			pods:  []*api.Pod{pod("a", 0, api.PodRunning, "late")},
			nodes: []string{"late"},
			since: map[string]time.Time{"late": epoch.Add(-time.Hour), "nobody": epoch.Add(-time.Hour)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := map[string]bool{}
			for _, n := range tc.nodes {
				nodes[n] = true
			}
			got, since := selectOrphans(tc.pods, nodes, tc.since, epoch, q)
			if !slices.Equal(names(got), tc.want) {
				t.Errorf("orphans %v, want %v", names(got), tc.want)
			}
			if tc.wantSince == nil {
				tc.wantSince = map[string]time.Time{}
			}
			if !maps.Equal(since, tc.wantSince) {
				t.Errorf("since %v, want %v", since, tc.wantSince)
			}
		})
	}
}
