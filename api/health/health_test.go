package health

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/berth-dev/berth/api"
)

func deployment(replicas, ready int32, conds ...api.WorkloadCondition) *api.Deployment {
	d := &api.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 2}}
	d.Spec.Replicas = &replicas
	deadline := int32(600)
	d.Spec.ProgressDeadlineSeconds = &deadline
	d.Status = api.DeploymentStatus{ObservedGeneration: 2, Replicas: replicas, UpdatedReplicas: replicas,
		ReadyReplicas: ready, AvailableReplicas: ready, Conditions: conds}
	return d
}

var (
	available   = api.WorkloadCondition{Type: api.DeploymentAvailable, Status: api.ConditionTrue}
	rolledOut   = api.WorkloadCondition{Type: api.DeploymentProgressing, Status: api.ConditionTrue, Reason: "NewReplicaSetAvailable"}
	pastDefault = api.WorkloadCondition{Type: api.DeploymentProgressing, Status: api.ConditionFalse, Reason: "ProgressDeadlineExceeded"}
)

func TestOf(t *testing.T) {
	stale := deployment(3, 3, available, rolledOut)
	stale.Generation = 3
	for _, tt := range []struct {
		name string
		obj  api.Object
		want status.Status
	}{
		{"configmap", &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}}, status.CurrentStatus},
		{"rolled out", deployment(3, 3, available, rolledOut), status.CurrentStatus},
		{"rolling", deployment(3, 1, rolledOut), status.InProgressStatus},
		{"not observed yet", stale, status.InProgressStatus},
		{"past its deadline", deployment(3, 1, pastDefault), status.FailedStatus},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, msg := Of(tt.obj); got != tt.want {
				t.Errorf("status %s (%s), want %s", got, msg, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	r := Check([]api.Object{
		&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}},
		deployment(3, 1, rolledOut),
	})
	if r.Total != 2 || r.Healthy() || r.Failed() || len(r.Unhealthy) != 1 {
		t.Fatalf("report %+v", r)
	}
	if got, want := r.Summary(5), "Deployment/default/web: InProgress: Available: 1/3"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}
