package plan

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile/apply"
	"github.com/berth-dev/berth/reconcile/job"
	"github.com/berth-dev/berth/reconcile/limitrange"
	"github.com/berth-dev/berth/reconcile/namespace"
	"github.com/berth-dev/berth/reconcile/quota"
	"github.com/berth-dev/berth/reconcile/volume"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/store"
)

var now = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// cluster returns a store holding the default namespace and nodes of 2
// cpu and 4Gi each.
func cluster(t testing.TB, nodes int) *store.Store {
	t.Helper()
	s, err := store.New(store.Memory{}, store.Options{
		Clock: clocktesting.NewFakePassiveClock(now),
		Admit: []store.AdmitFunc{namespace.Admit, volume.AdmitDefaultClass, limitrange.Admit, quota.Admit, job.Admit},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if _, err := s.Create(ctx, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		if _, err := s.Create(ctx, node(fmt.Sprintf("node-%d", i), "2", "4Gi")); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func node(name, cpu, memory string) *api.Node {
	return &api.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{api.LabelHostname: name}},
		Status: api.NodeStatus{
			Allocatable: api.ResourceList{
				api.ResourceCPU:    resource.MustParse(cpu),
				api.ResourceMemory: resource.MustParse(memory),
				api.ResourcePods:   resource.MustParse("110"),
			},
			Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}},
		},
	}
}

func decode(t testing.TB, docs ...string) []*api.Decoded {
	t.Helper()
	objs, errs := api.DecodeStream("plan.yaml", []byte(strings.Join(docs, "\n---\n")), api.DecodeOptions{DropStatus: true, Kinds: api.UncheckedCustomKind})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return objs
}

func deployment(name string, replicas int, cpu, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: default}
spec:
  replicas: %[2]d
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
      - name: main
        image: %[4]s
        resources: {requests: {cpu: %[3]q, memory: 100Mi}}
`, name, replicas, cpu, image)
}

const service = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 80}]
`

const orphanService = `apiVersion: v1
kind: Service
metadata: {name: nobody, namespace: default}
spec:
  selector: {app: nobody}
  ports: [{port: 80}]
`

const claim = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  storageClassName: ""
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`

const quotaConfigMaps = `apiVersion: v1
kind: ResourceQuota
metadata: {name: cm, namespace: default}
spec: {hard: {configmaps: "0"}}
`

const configMap = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {a: b}
`

func run(t *testing.T, s *store.Store, source string, docs ...string) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rev := s.Revision()
	rep, err := Run(ctx, s, decode(t, docs...), nil, Options{Source: source, Clock: clocktesting.NewFakePassiveClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Revision() != rev {
		t.Fatalf("the plan moved the store from revision %d to %d", rev, s.Revision())
	}
	return rep
}

// settle applies docs to the live store for real and runs the
// controllers and scheduler on it, so that a plan starts from workloads
// that run.
func settle(t *testing.T, s *store.Store, docs ...string) {
	t.Helper()
	ctx := context.Background()
	desired, errs := apply.Prepare("api", decode(t, docs...), nil, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	a := apply.New(s, apply.Options{})
	before := s.Snapshot()
	if _, err := s.Txn(ctx, func(tx *store.Txn) error {
		_, _, err := a.Stage(tx, "api", desired, false)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := simulate(ctx, before, s, clocktesting.NewFakeClock(now), sched.FrameworkOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestPlanReport(t *testing.T) {
	t.Run("fits", func(t *testing.T) {
		s := cluster(t, 2)
		rep := run(t, s, "", deployment("web", 2, "500m", "web:1"), service)
		if !rep.Fits || len(rep.Failures()) > 0 {
			t.Fatalf("plan fails: %v", rep.Failures())
		}
		if rep.Pods.Created != 2 || rep.Pods.Placed != 2 || rep.Pods.Unplaced != 0 {
			t.Fatalf("pods %+v, want 2 created and placed", rep.Pods)
		}
		if len(rep.Changes) != 2 || rep.Changes[0].Action != "create" {
			t.Fatalf("changes %+v", rep.Changes)
		}
		if rep.Total.MilliCPU != 3000 || rep.Total.AllocatableMilliCPU != 4000 || len(rep.Nodes) != 2 {
			t.Fatalf("capacity %+v over %d nodes, want 3000m of 4000m left", rep.Total, len(rep.Nodes))
		}
		if len(rep.EmptyServices) != 0 {
			t.Fatalf("empty services %+v", rep.EmptyServices)
		}
	})
	t.Run("more cpu than any node", func(t *testing.T) {
		s := cluster(t, 3)
		rep := run(t, s, "", deployment("big", 2, "3", "web:1"))
		if rep.Fits {
			t.Fatal("plan fits")
		}
		const want = "0/3 nodes are available: 3 Insufficient cpu."
		if len(rep.Unplaceable) != 1 || rep.Unplaceable[0].Workload != "Deployment/default/big" || rep.Unplaceable[0].Pods != 2 ||
			len(rep.Unplaceable[0].Reasons) != 1 || !strings.HasPrefix(rep.Unplaceable[0].Reasons[0], want) {
			t.Fatalf("unplaceable %+v, want 2 pods of Deployment/default/big: %s", rep.Unplaceable, want)
		}
	})
	t.Run("service without pods", func(t *testing.T) {
		rep := run(t, cluster(t, 1), "", orphanService)
		if !rep.Fits || len(rep.EmptyServices) != 1 || rep.EmptyServices[0].Object != "Service/default/nobody" {
			t.Fatalf("fits %v, empty services %+v", rep.Fits, rep.EmptyServices)
		}
	})
	t.Run("claim nothing binds", func(t *testing.T) {
		rep := run(t, cluster(t, 1), "", claim)
		if rep.Fits || len(rep.PendingClaims) != 1 || rep.PendingClaims[0].Object != "PersistentVolumeClaim/default/data" {
			t.Fatalf("fits %v, pending claims %+v", rep.Fits, rep.PendingClaims)
		}
	})
	t.Run("quota refuses", func(t *testing.T) {
		s := cluster(t, 1)
		settle(t, s, quotaConfigMaps)
		rep := run(t, s, "", configMap)
		if rep.Fits || len(rep.Refusals) != 1 || rep.Refusals[0].Object != "ConfigMap/default/settings" {
			t.Fatalf("fits %v, refusals %+v", rep.Fits, rep.Refusals)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		rep := run(t, cluster(t, 1), "", `apiVersion: v1
kind: ConfigMap
metadata: {name: "Bad_Name", namespace: default}
`)
		if rep.Fits || len(rep.Errors) == 0 {
			t.Fatalf("fits %v, errors %v", rep.Fits, rep.Errors)
		}
	})
}

func TestPlanRollout(t *testing.T) {
	t.Run("surge has room", func(t *testing.T) {
		s := cluster(t, 2)
		settle(t, s, deployment("web", 2, "500m", "web:1"))
		rep := run(t, s, "", deployment("web", 2, "500m", "web:2"))
		if !rep.Fits || len(rep.Rollouts) != 1 || !rep.Rollouts[0].Fits {
			t.Fatalf("fits %v, rollouts %+v, failures %v", rep.Fits, rep.Rollouts, rep.Failures())
		}
		if rep.Pods.Created != 2 || rep.Pods.Deleted != 2 {
			t.Fatalf("pods %+v, want 2 created and 2 deleted", rep.Pods)
		}
	})
	t.Run("surge has no room", func(t *testing.T) {
		s := cluster(t, 2)
		settle(t, s, deployment("web", 2, "1500m", "web:1"))
		rep := run(t, s, "", deployment("web", 2, "1500m", "web:2"))
		if rep.Fits || len(rep.Rollouts) != 1 || rep.Rollouts[0].Fits {
			t.Fatalf("fits %v, rollouts %+v", rep.Fits, rep.Rollouts)
		}
		if msg := rep.Rollouts[0].Message; !strings.Contains(msg, "stalls at 1/2") || !strings.Contains(msg, "have no room") || !strings.Contains(msg, "Insufficient cpu") {
			t.Fatalf("rollout message %q", msg)
		}
	})
}
