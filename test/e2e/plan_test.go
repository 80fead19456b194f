package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/testtool"
)

func planDeployment(name, cpu string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      containers:
      - {name: main, image: busybox, command: [sleep, "1000"], resources: {requests: {cpu: "` + cpu + `"}}}
`
}

func TestPlanReportsWhatWouldNotFit(t *testing.T) {
	testtool.Need(t, "kubectl")
	s := startServer(t)
	s.kubectl(t, "create", "-f", "testdata/plain-node.json")
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(planDeployment("big", "8")), 0o600); err != nil {
		t.Fatal(err)
	}
	revision := func() string {
		return s.kubectl(t, "get", "deployments", "-A", "-o", "jsonpath={.metadata.resourceVersion}")
	}
	before := revision()
	out, stderr, code := s.berth(t, "plan", "-f", big)
	if code != 2 {
		t.Fatalf("plan exited %d, want 2\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"Deployment/default/big: 2 pod(s): 0/1 nodes are available: 1 Insufficient cpu.", "Result: does not fit"} {
		if !strings.Contains(out, want) {
			t.Fatalf("plan output lacks %q:\n%s", want, out)
		}
	}
	if after := revision(); after != before {
		t.Fatalf("the plan moved the store from revision %s to %s", before, after)
	}
	if _, _, code := s.berth(t, "get", "deployment", "big"); code == 0 {
		t.Fatal("the plan created the Deployment")
	}

	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte(planDeployment("small", "1")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = s.berth(t, "plan", "-f", small, "-o", "json")
	if code != 0 {
		t.Fatalf("plan exited %d, want 0\n%s%s", code, out, stderr)
	}
	var rep struct {
		Fits bool `json:"fits"`
		Pods struct {
			Created, Placed int
		} `json:"pods"`
		Total struct {
			MilliCPU int64 `json:"milliCPU"`
		} `json:"total"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !rep.Fits || rep.Pods.Created != 2 || rep.Pods.Placed != 2 || rep.Total.MilliCPU != 2000 {
		t.Fatalf("report %+v, want it to fit with 2 pods placed and 2 cpu left\n%s", rep, out)
	}
	s.mustBerth(t, "apply", "-f", small)
	s.mustBerth(t, "get", "deployment", "small")
}
