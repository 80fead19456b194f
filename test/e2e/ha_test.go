package e2e

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/store/etcd/etcdtest"
)

// TestHighAvailability runs the control plane as an operator would to
// outlive a machine: two servers over one etcd, an agent that knows them
// both. The follower serves reads, DNS and kubectl and passes writes on;
// when the leader is killed the follower takes over, the agent moves to
// it, and the controllers go on healing; the old leader comes back as a
// follower.
func TestHighAvailability(t *testing.T) {
	ep, err := url.Parse(etcdtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"--store", "etcd://" + ep.Host, "--leader-elect-lease-duration", "2s"}
	first := startServer(t, common...)
	waitFor(t, 20*time.Second, "the first server to lead", func() error {
		if !strings.Contains(first.Output(), "leading the cluster") {
			return errors.New("not yet")
		}
		return nil
	})
	second := startServer(t, append(common, "--listen", fmt.Sprintf("127.0.0.2:%d", freePort(t, "127.0.0.2")))...)
	if strings.Contains(second.Output(), "leading the cluster") {
		t.Fatal("both servers lead")
	}

	startAgent(t, second, "ha-node", "127.0.0.31", "--server", first.url+","+second.url)
	port := freePort(t, "127.0.0.31")
	second.applyText(t, echoDeployment("web", 1, port, "hello from either")+`---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  # headless: the name resolves to the pods, which need no service proxy
  clusterIP: None
  selector: {app: web}
  ports:
  - {port: 80, targetPort: http}
`)
	waitRunning(t, second, "web", 1, "the pod applied through the follower runs")
	waitFor(t, 30*time.Second, "the follower's DNS names the pod", func() error {
		if ips := digA(t, second, "web.default.svc.cluster.local"); len(ips) != 1 || ips[0] != "127.0.0.31" {
			return fmt.Errorf("A records %v", ips)
		}
		return nil
	})
	if out := second.kubectl(t, "get", "deployments", "web", "-o", "name"); strings.TrimSpace(out) != "deployment.apps/web" {
		t.Fatalf("kubectl against the follower: %q", out)
	}

	// The leader dies, with no time to resign.
	first.stop(syscall.SIGKILL, 0)
	waitFor(t, 30*time.Second, "the second server to take over", func() error {
		if !strings.Contains(second.Output(), "leading the cluster") {
			return errors.New("not yet")
		}
		return nil
	})
	// The new leader's controllers heal: a deleted pod is made again,
	// and the agent, now talking to the second server, runs it.
	pods, err := runningPods(t, second, "web")
	if err != nil || len(pods) != 1 {
		t.Fatalf("pods after the failover: %v %v", pods, err)
	}
	var gone string
	for name := range pods {
		gone = name
	}
	second.mustBerth(t, "delete", "pod", gone)
	waitFor(t, 60*time.Second, "a new pod to replace the deleted one", func() error {
		pods, err := runningPods(t, second, "web")
		if err != nil {
			return err
		}
		if _, old := pods[gone]; old || len(pods) != 1 {
			return fmt.Errorf("running: %v", pods)
		}
		return nil
	})
	waitNodeReady(t, second, "ha-node", "True")

	// The old leader starts again on its data dir, and follows.
	back := startServerIn(t, first.dataDir, append(common, "--listen", strings.TrimPrefix(first.url, "https://"))...)
	if out := back.kubectl(t, "get", "pods", "-l", "app=web", "-o", "name"); strings.Count(out, "pod/") != 1 {
		t.Fatalf("kubectl against the restarted server: %q", out)
	}
	back.kubectl(t, "create", "configmap", "after", "--from-literal", "k=v")
	if out, _, code := second.berth(t, "get", "configmap", "after", "-o", "name"); code != 0 || strings.TrimSpace(out) != "configmap/after" {
		t.Fatalf("the write through the restarted server is not the leader's: %q %d", out, code)
	}
	if strings.Contains(back.Output(), "leading the cluster") {
		t.Fatal("the restarted server leads beside the second")
	}
}
