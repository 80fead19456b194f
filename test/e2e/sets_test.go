package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// statefulSetYAML is a headless Service and a StatefulSet of 3 whose pods
// keep, in their claim, the time they first started, and print it.
const statefulSetYAML = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: None
  selector: {app: web}
  ports:
  - {name: http, port: 80}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  replicas: 3
  serviceName: web
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: sleeper
        command: [sh, -c, 'f="$BERTH_VOLUME_DATA/first"; [ -f "$f" ] || date +%s%N > "$f"; echo "first=$(cat "$f") host=$(hostname)"; exec sleep 100000']
        volumeMounts:
        - {name: data, mountPath: /data}
        readinessProbe:
          exec: {command: ["true"]}
          initialDelaySeconds: 1
          periodSeconds: 1
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 1Mi}
`

var firstLine = regexp.MustCompile(`first=(\d+)`)

// TestStatefulSetEndToEnd: a StatefulSet of 3 on a real agent comes up in
// order (no pod before the one below it is ready), each pod keeps its
// claim's data across its deletion, web-0.web answers in the cluster DNS,
// and kubectl scales it and follows, restarts, lists and undoes its
// rollout.
func TestStatefulSetEndToEnd(t *testing.T) {
	t.Parallel()
	digPath := testtool.Need(t, "dig")
	s := startServer(t)
	startAgent(t, s, "n1", "127.0.0.81")
	s.applyText(t, statefulSetYAML)

	waitFor(t, 90*time.Second, "3 ready pods, in order", func() error {
		// One listing, so that what it says of readiness and of the
		// pods there are is of one moment.
		pods, err := podsOf(t, s, "web")
		if err != nil {
			return err
		}
		ready := map[string]bool{}
		for _, p := range pods {
			conds, _ := field(p, "status.conditions").([]any)
			for _, c := range conds {
				if c, _ := c.(map[string]any); c["type"] == "Ready" && c["status"] == "True" {
					ready[field(p, "metadata.name").(string)] = true
				}
			}
		}
		for _, p := range pods {
			name := field(p, "metadata.name").(string)
			var ord int
			if _, err := fmt.Sscanf(name, "web-%d", &ord); err != nil {
				t.Fatalf("pod %s is not named for an ordinal", name)
			}
			if ord > 0 && !ready[fmt.Sprintf("web-%d", ord-1)] {
				t.Fatalf("%s exists while web-%d is not ready", name, ord-1)
			}
		}
		if len(ready) != 3 {
			return fmt.Errorf("ready %v", ready)
		}
		return nil
	})
	for _, claim := range []string{"data-web-0", "data-web-1", "data-web-2"} {
		waitClaimBound(t, s, claim)
	}
	if out := s.kubectl(t, "rollout", "status", "sts/web", "--timeout=30s"); !strings.Contains(out, "partitioned roll out complete") && !strings.Contains(out, "roll out complete") {
		t.Errorf("kubectl rollout status: %s", out)
	}

	// The data outlives the pod.
	first := func(pod string) string {
		t.Helper()
		var v string
		waitFor(t, 30*time.Second, pod+"'s first start in its logs", func() error {
			out, _, _ := s.berth(t, "logs", pod)
			m := firstLine.FindStringSubmatch(out)
			if m == nil {
				return fmt.Errorf("logs %q", out)
			}
			v = m[1]
			return nil
		})
		return v
	}
	before := first("web-1")
	uid := func() string {
		p, err := s.getJSON(t, "pod", "web-1")
		if err != nil {
			return ""
		}
		u, _ := field(p, "metadata.uid").(string)
		return u
	}
	oldUID := uid()
	s.kubectl(t, "delete", "pod", "web-1", "--wait=false")
	waitFor(t, 60*time.Second, "web-1 made again and ready", func() error {
		if u := uid(); u == "" || u == oldUID {
			return fmt.Errorf("uid %q", u)
		}
		ready, err := readyPods(t, s, "web")
		if _, ok := ready["web-1"]; !ok || err != nil {
			return fmt.Errorf("ready %v %v", ready, err)
		}
		return nil
	})
	if after := first("web-1"); after != before {
		t.Errorf("web-1's claim lost its data: first start %s, then %s", before, after)
	}

	// Stable DNS through the headless Service.
	waitFor(t, 30*time.Second, "web-0.web in DNS", func() error {
		out, err := exec.Command(digPath, "@127.0.0.1", "-p", fmt.Sprint(s.dnsPort), "+time=2", "+tries=1", "+short",
			"web-0.web.default.svc.cluster.local", "A").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "127.0.0.81" {
			return fmt.Errorf("dig: %q %v", out, err)
		}
		return nil
	})

	// kubectl scale, rollout restart, history and undo.
	s.kubectl(t, "scale", "sts/web", "--replicas=2")
	waitFor(t, 60*time.Second, "web-2 gone", func() error {
		if pods, err := podsOf(t, s, "web"); err != nil || len(pods) != 2 {
			return fmt.Errorf("%d pods %v", len(pods), err)
		}
		return nil
	})
	if _, err := s.getJSON(t, "pvc", "data-web-2"); err != nil {
		t.Errorf("the claim of web-2 went with the scale down (whenScaled: Retain): %v", err)
	}
	s.kubectl(t, "rollout", "restart", "sts/web")
	s.kubectl(t, "rollout", "status", "sts/web", "--timeout=90s")
	hist := s.kubectl(t, "rollout", "history", "sts/web")
	if !regexp.MustCompile(`(?m)^1\s`).MatchString(hist) || !regexp.MustCompile(`(?m)^2\s`).MatchString(hist) {
		t.Errorf("rollout history:\n%s", hist)
	}
	s.kubectl(t, "rollout", "undo", "sts/web")
	s.kubectl(t, "rollout", "status", "sts/web", "--timeout=90s")
	sts, err := s.getJSON(t, "sts", "web")
	if err != nil {
		t.Fatal(err)
	}
	if ann := field(sts, "spec.template.metadata.annotations"); ann != nil {
		if m, _ := ann.(map[string]any); m["kubectl.kubernetes.io/restartedAt"] != nil {
			t.Errorf("undo kept the restart: %v", ann)
		}
	}
	if out := s.mustBerth(t, "get", "sts", "web"); !regexp.MustCompile(`web\s+2/2`).MatchString(out) {
		t.Errorf("berth get sts:\n%s", out)
	}
}

// daemonSetYAML is a DaemonSet of sleepers, ready a second after they
// start.
const daemonSetYAML = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: logs
spec:
  selector:
    matchLabels: {app: logs}
  template:
    metadata:
      labels: {app: logs}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: sleeper
        command: [sh, -c, "exec sleep 100000"]
        readinessProbe:
          exec: {command: ["true"]}
          initialDelaySeconds: 1
          periodSeconds: 1
`

// TestDaemonSetFollowsNodes: a DaemonSet on two agents runs a pod on
// each; a third agent joining gets one, a node deleted loses its pod; a
// restart rolls out node by node and kubectl follows and undoes it.
func TestDaemonSetFollowsNodes(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	startAgent(t, s, "n1", "127.0.0.82")
	n2 := startAgent(t, s, "n2", "127.0.0.83")
	s.applyText(t, daemonSetYAML)
	nodesOf := func(want ...string) func() error {
		return func() error {
			ready, err := readyPods(t, s, "logs")
			if err != nil {
				return err
			}
			var nodes []string
			for _, v := range ready {
				nodes = append(nodes, strings.Fields(v)[0])
			}
			if fmt.Sprint(slices.Sorted(slices.Values(nodes))) != fmt.Sprint(want) {
				return fmt.Errorf("ready pods on %v", nodes)
			}
			return nil
		}
	}
	waitFor(t, 60*time.Second, "a ready pod on n1 and n2", nodesOf("n1", "n2"))
	startAgent(t, s, "n3", "127.0.0.84")
	waitFor(t, 60*time.Second, "n3's pod", nodesOf("n1", "n2", "n3"))
	waitFor(t, 30*time.Second, "status of 3 nodes", func() error {
		ds, err := s.getJSON(t, "ds", "logs")
		if err != nil {
			return err
		}
		for _, f := range []string{"desiredNumberScheduled", "currentNumberScheduled", "numberReady", "numberAvailable", "updatedNumberScheduled"} {
			if v := field(ds, "status."+f); fmt.Sprint(v) != "3" {
				return fmt.Errorf("status.%s %v", f, v)
			}
		}
		return nil
	})

	// n2 leaves: its agent stops and its Node is deleted.
	n2.stop(syscall.SIGTERM, 10*time.Second)
	s.kubectl(t, "delete", "node", "n2")
	waitFor(t, 60*time.Second, "n2's pod gone", func() error {
		pods, err := podsOf(t, s, "logs")
		if err != nil {
			return err
		}
		for _, p := range pods {
			if field(p, "spec.nodeName") == "n2" && field(p, "metadata.deletionTimestamp") == nil {
				return fmt.Errorf("%s still on n2", field(p, "metadata.name"))
			}
		}
		if ds, _ := s.getJSON(t, "ds", "logs"); fmt.Sprint(field(ds, "status.desiredNumberScheduled")) != "2" {
			return fmt.Errorf("desired %v", field(ds, "status.desiredNumberScheduled"))
		}
		return nil
	})

	s.kubectl(t, "rollout", "restart", "ds/logs")
	out := s.kubectl(t, "rollout", "status", "ds/logs", "--timeout=90s")
	if !strings.Contains(out, "successfully rolled out") {
		t.Errorf("rollout status: %s", out)
	}
	waitFor(t, 30*time.Second, "restarted pods ready on n1 and n3", nodesOf("n1", "n3"))
	if hist := s.kubectl(t, "rollout", "history", "ds/logs"); !regexp.MustCompile(`(?m)^2\s`).MatchString(hist) {
		t.Errorf("rollout history:\n%s", hist)
	}
	s.kubectl(t, "rollout", "undo", "ds/logs")
	s.kubectl(t, "rollout", "status", "ds/logs", "--timeout=90s")
	if out := s.mustBerth(t, "get", "ds", "logs"); !regexp.MustCompile(`logs\s+2\s+2\s+2\s+2\s+2`).MatchString(out) {
		t.Errorf("berth get ds:\n%s", out)
	}
}
