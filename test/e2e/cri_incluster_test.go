package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/testtool"
)

// apiAddr is where the API listens in TestCRIRuntimeInClusterClient: an
// address of the test's network namespace that its pods reach through
// their gateway.
const apiAddr = "198.18.100.1"

// TestCRIRuntimeInClusterClient runs `berth server --runtime cri` on a
// containerd the test started itself, named by
// --container-runtime-endpoint: a pod of an image the test assembles,
// holding a static Go program built here on stock client-go, runs on an
// address of containerd's pod network and lists the pods of its
// namespace from the API with rest.InClusterConfig(): the address in
// KUBERNETES_SERVICE_HOST and _PORT, the service account's token and
// ca.crt the agent projects.
func TestCRIRuntimeInClusterClient(t *testing.T) {
	testtool.Need(t, "kubectl")
	critest.Need(t)
	if !critest.InNetns(t) {
		return
	}
	if out, err := exec.Command("ip", "addr", "add", apiAddr+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip addr add: %v: %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env := critest.Start(t, ctx)

	image := env.Registry.Push(t, "incluster:1", critest.ProgramImage(t, ctx, "./testdata/incluster"))

	dataDir := critest.TempDir(t)
	s := startServerIn(t, dataDir, "--agent=true", "--runtime", "cri", "--container-runtime-endpoint", env.Containerd.Endpoint(),
		"--pod-network", "none", "--cluster-cidr", "198.18.0.0/16", "--node-name", "cri", "--node-ip", apiAddr,
		"--agent-listen", fmt.Sprintf("%s:%d", apiAddr, freePort(t, apiAddr)),
		"--listen", fmt.Sprintf("%s:%d", apiAddr, freePort(t, apiAddr)))
	waitNodeReady(t, s, "cri", "True")
	if v := s.kubectl(t, "get", "node", "cri", "-o", "jsonpath={.status.nodeInfo.containerRuntimeVersion}"); !strings.HasPrefix(v, "containerd://") {
		t.Fatalf("node runtime %q, want the test's containerd", v)
	}
	s.grantView(t, "default", "default")
	s.applyText(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: incluster
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: client
    image: %s
`, image))
	logs := waitPodSucceeded(t, s, "incluster")
	for _, want := range []string{"in-cluster config of " + s.url + "\n", "pod/incluster\n"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the in-cluster client's output lacks %q:\n%s", want, logs)
		}
	}
	ip := s.kubectl(t, "get", "pod", "incluster", "-o", "jsonpath={.status.podIP}")
	if !strings.HasPrefix(ip, "198.18.7.") {
		t.Errorf("pod IP %q, want one of the test containerd's network %s", ip, critest.PodCIDR)
	}
	s.kubectl(t, "delete", "pod", "incluster", "--wait=true", "--timeout=60s")
}
