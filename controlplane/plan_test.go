package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

func gatedDeployment(cpu string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: main, image: busybox, command: [sleep, "1000"], resources: {requests: {cpu: "` + cpu + `"}}}
`
}

// TestPlanGateHoldsBackWhatWouldNotFit runs a Source gated on its plan:
// a revision whose pods fit is applied; one asking more CPU than the node
// has is held back with the scheduler's reason, and the one before stays.
// The plan endpoint answers the same, and writes nothing.
func TestPlanGateHoldsBackWhatWouldNotFit(t *testing.T) {
	cp := startControlPlane(t, t.TempDir(), StoreMemory)
	st := cp.Store()
	ctx := context.Background()
	node := &api.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{api.LabelHostname: "n1"}},
		Status: api.NodeStatus{
			Allocatable: api.ResourceList{api.ResourceCPU: resource.MustParse("4"), api.ResourceMemory: resource.MustParse("8Gi"), api.ResourcePods: resource.MustParse("110")},
			Conditions:  []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}},
		},
	}
	if _, err := st.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), gatedDeployment("1"))
	src := &api.Source{ObjectMeta: metav1.ObjectMeta{Name: "gated"}, Spec: api.SourceSpec{Type: api.SourceTypeDir, URL: dir, Gate: api.SourceGatePlan}}
	if _, err := st.Create(ctx, src); err != nil {
		t.Fatal(err)
	}
	deploymentCPU := func() (string, error) {
		obj, err := st.Get(api.KindOf(&api.Deployment{}), "default", "web")
		if err != nil {
			return "", err
		}
		q := obj.(*api.Deployment).Spec.Template.Spec.Containers[0].Resources.Requests[api.ResourceCPU]
		return q.String(), nil
	}
	poll(t, "the revision that fits applied", func() error {
		if cpu, err := deploymentCPU(); err != nil || cpu != "1" {
			return fmt.Errorf("cpu %q: %v", cpu, err)
		}
		return nil
	})

	write(t, filepath.Join(dir, "web.yaml"), gatedDeployment("8"))
	poll(t, "the revision that does not fit held back", func() error {
		c := meta.FindStatusCondition(sourceObject(t, st, "gated").Status.Conditions, api.SourceReady)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "Insufficient cpu") {
			return fmt.Errorf("Ready %+v", c)
		}
		return nil
	})
	if cpu, err := deploymentCPU(); err != nil || cpu != "1" {
		t.Fatalf("the live Deployment asks cpu %q (%v), want the revision before's 1", cpu, err)
	}

	// The endpoint: the same manifests planned, nothing written.
	creds := cp.Credentials()
	c, err := client.New(&client.Config{Server: "https://" + cp.Addr().String(), Token: creds.AdminToken, CAData: creds.CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	rev := st.Revision()
	resp, err := c.Do(ctx, http.MethodPost, api.PlanPath, url.Values{"timeout": {"20s"}, "source": {"gated"}}, []byte(gatedDeployment("8")), "application/yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var rep PlanReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	if rep.Fits || len(rep.Rollouts) != 1 || !strings.Contains(rep.Rollouts[0].Message, "Insufficient cpu") {
		t.Fatalf("report fits %v, rollouts %+v", rep.Fits, rep.Rollouts)
	}
	if rep.StoreRevision < rev {
		t.Fatalf("planned at revision %d, before %d", rep.StoreRevision, rev)
	}
	if cpu, err := deploymentCPU(); err != nil || cpu != "1" {
		t.Fatalf("after the plan the Deployment asks cpu %q (%v), want 1", cpu, err)
	}
	if _, err := c.Do(ctx, http.MethodGet, api.PlanPath, nil, nil, ""); err == nil || !strings.Contains(err.Error(), "POST") {
		t.Fatalf("GET: %v, want 405 asking for POST", err)
	}
}
