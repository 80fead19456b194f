package sched

import (
	"errors"
	"testing"

	"github.com/berth-dev/berth/api"
)

// claimHook is a VolumeFilter that rejects the pod outright, rejects
// nodes by name, or fails.
type claimHook struct {
	pod     error
	rejects map[string]*Status
}

func (h claimHook) ForPod(*api.Pod) (func(*NodeInfo) *Status, error) {
	if h.pod != nil {
		return nil, h.pod
	}
	return func(n *NodeInfo) *Status { return h.rejects[n.Name()] }, nil
}

func TestVolumeHookMessages(t *testing.T) {
	nodes := NewNodes(makeNode("n1"), makeNode("n2"), makeNode("n3"))
	tests := []struct {
		name    string
		hook    claimHook
		want    string
		wantErr bool
	}{
		{name: "pod-level rejection", hook: claimHook{pod: &PodUnschedulableError{Message: ReasonUnboundImmediateClaims}},
			want: "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."},
		{name: "per-node rejections", hook: claimHook{rejects: map[string]*Status{"n1": StatusVolumeNodeAffinityConflict, "n2": StatusVolumeBindConflict, "n3": StatusVolumeNodeAffinityConflict}},
			want: "0/3 nodes are available: 1 node(s) didn't find available persistent volumes to bind, 2 node(s) had volume node affinity conflict."},
		{name: "other errors are not fit errors", hook: claimHook{pod: errors.New("store closed")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fw := NewFramework(FrameworkOptions{Volumes: tt.hook})
			_, err := fw.Schedule(NewPodInfo(makePod("p")), nodes)
			var fit *FitError
			if tt.wantErr {
				if err == nil || errors.As(err, &fit) {
					t.Fatalf("err = %v, want a plain error", err)
				}
				return
			}
			if !errors.As(err, &fit) || fit.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
