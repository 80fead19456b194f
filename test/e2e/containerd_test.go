package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/agent/runtime/cri"
	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/testtool"
)

// imageDeployment is a Deployment of the test's web image: busybox httpd on
// port 8080 of the pod's own address, a readiness probe there.
func imageDeployment(name, image string) string {
	return deploymentYAML(name, 1, fmt.Sprintf(`      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: %s
        args: ["8080"]
        ports:
        - {name: http, containerPort: 8080}
        readinessProbe:
          httpGet: {path: /index.html, port: http}
          periodSeconds: 1
`, image))
}

// TestContainerdRunsDeployments runs `berth server --runtime containerd`
// in a network namespace of the test's own: two Deployments of an image
// listening on the same port share the node, each serving on its pod's
// own address; kubectl logs and exec reach them; and a restart of the
// server (its agent and containerd) takes the running pods over without
// starting any again.
func TestContainerdRunsDeployments(t *testing.T) {
	testtool.Need(t, "kubectl")
	critest.Need(t)
	if !critest.InNetns(t) {
		return
	}
	reg := critest.StartRegistry(t)
	pause := reg.Push(t, "pause:test", critest.PauseImage(t))
	web := reg.Push(t, "web:1", critest.BusyboxImage(t, critest.ImageConfig{
		Entrypoint: []string{"/bin/sh", "-c", `echo "listening on $HOSTNAME:$0"; exec httpd -f -p "$0" -h /www`},
		Cmd:        []string{"80"},
	}))
	dataDir := critest.TempDir(t)
	cdDir := filepath.Join(dataDir, "agent", "containerd")
	critest.CleanUpAfter(t, cdDir)
	reg.WriteHosts(t, filepath.Join(cdDir, "certs.d"))
	args := []string{"--agent=true", "--runtime", "containerd", "--pause-image", pause, "--cluster-cidr", "198.18.0.0/16",
		"--node-name", "cd", "--node-ip", "127.0.0.1", "--agent-listen", fmt.Sprintf("127.0.0.1:%d", freePort(t, "127.0.0.1"))}
	s := startServerIn(t, dataDir, args...)
	waitNodeReady(t, s, "cd", "True")
	if v := s.kubectl(t, "get", "node", "cd", "-o", "jsonpath={.status.nodeInfo.containerRuntimeVersion} {.spec.podCIDR}"); !strings.HasPrefix(v, "containerd://") || !strings.HasSuffix(v, " 198.18.0.0/24") {
		t.Fatalf("node: %q, want containerd's version and a podCIDR", v)
	}

	s.applyText(t, imageDeployment("web-a", web)+"\n---\n"+imageDeployment("web-b", web))
	s.kubectl(t, "wait", "--for=condition=Available", "deployment/web-a", "deployment/web-b", "--timeout=120s")
	ips := map[string]string{}
	pods := map[string]string{}
	for _, app := range []string{"web-a", "web-b"} {
		out := s.kubectl(t, "get", "pods", "-l", "app="+app, "-o", "jsonpath={.items[0].metadata.name} {.items[0].status.podIP} {.items[0].spec.nodeName}")
		f := strings.Fields(out)
		if len(f) != 3 || !strings.HasPrefix(f[1], "198.18.0.") || f[2] != "cd" {
			t.Fatalf("pod of %s: %q", app, out)
		}
		pods[app], ips[app] = f[0], f[1]
		if body, err := httpGet("http://" + f[1] + ":8080/index.html"); err != nil || body != "hello from an image\n" {
			t.Fatalf("GET %s's pod at %s: %q, %v", app, f[1], body, err)
		}
	}
	if ips["web-a"] == ips["web-b"] {
		t.Fatalf("both pods at %s", ips["web-a"])
	}
	if out := s.kubectl(t, "logs", pods["web-a"]); out != "listening on "+pods["web-a"]+":8080\n" {
		t.Errorf("kubectl logs: %q", out)
	}
	if out := s.kubectl(t, "logs", "--timestamps", pods["web-b"]); !strings.HasSuffix(out, " listening on "+pods["web-b"]+":8080\n") {
		t.Errorf("kubectl logs --timestamps: %q", out)
	}
	if out := s.kubectl(t, "exec", pods["web-a"], "--", "sh", "-c", "cat /www/index.html; hostname"); out != "hello from an image\n"+pods["web-a"]+"\n" {
		t.Errorf("kubectl exec: %q", out)
	}

	// kubectl port-forward goes through containerd's streaming server.
	line, stderr := startForLine(t, s.command(t, "kubectl", "port-forward", "pod/"+pods["web-a"], "--address", "127.0.0.1", ":8080"))
	m := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("kubectl port-forward said %q, stderr %s", line, stderr.String())
	}
	if body, err := httpGet("http://127.0.0.1:" + m[1] + "/index.html"); err != nil || body != "hello from an image\n" {
		t.Errorf("through kubectl port-forward: %q, %v; stderr %s", body, err, stderr.String())
	}

	// kubectl attach -i goes through containerd's streaming server too:
	// a line sent to a container of stdin: true, tty: false comes back.
	s.applyText(t, `apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: reader
    image: `+web+`
    stdin: true
    tty: false
    command: [sh, -c, 'while read line; do echo "read $line"; done']
`)
	s.kubectl(t, "wait", "--for=condition=Ready", "pod/reader", "--timeout=120s")
	attach := s.command(t, "kubectl", "attach", "-i", "reader")
	in, err := attach.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var attached testtool.Buffer
	attach.Stdout, attach.Stderr = &attached, &attached
	if err := attach.Start(); err != nil {
		t.Fatal(err)
	}
	testtool.SayUntil(t, time.Minute, in, "hello through containerd\n", &attached, "read hello through containerd")
	in.Close()
	if err := attach.Wait(); err != nil {
		t.Errorf("kubectl attach -i: %v\n%s", err, attached.String())
	}
	if phase := s.kubectl(t, "get", "pod", "reader", "-o", "jsonpath={.status.phase}"); phase != "Running" {
		t.Errorf("the reader pod is %s after kubectl attach, want Running", phase)
	}
	s.kubectl(t, "delete", "pod", "reader", "--timeout=60s")

	// A restart of the server, its agent and containerd: the pods run on.
	s.stop(syscall.SIGTERM, 30*time.Second)
	s = startServerIn(t, dataDir, args...)
	waitNodeReady(t, s, "cd", "True")
	waitFor(t, 60*time.Second, "the pods taken over", func() error {
		for _, app := range []string{"web-a", "web-b"} {
			out, err := s.kubectlErr(t, "get", "pods", "-l", "app="+app, "-o", "jsonpath={.items[0].metadata.name} {.items[0].status.podIP} {.items[0].status.containerStatuses[0].restartCount} {.items[0].status.containerStatuses[0].ready}")
			if err != nil || out != pods[app]+" "+ips[app]+" 0 true" {
				return fmt.Errorf("%s: %q %v", app, out, err)
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := cri.New(ctx, cri.Options{Endpoint: "unix://" + filepath.Join(cdDir, "containerd.sock")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	runs, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].State != runtime.StateRunning || runs[1].State != runtime.StateRunning || runs[0].ID.Attempt != 0 || runs[1].ID.Attempt != 0 {
		t.Fatalf("containers after the restart: %+v", runs)
	}
	for _, app := range []string{"web-a", "web-b"} {
		if body, err := httpGet("http://" + ips[app] + ":8080/index.html"); err != nil || body != "hello from an image\n" {
			t.Fatalf("GET %s's pod after the restart: %q, %v", app, body, err)
		}
	}

	// A rolling update with maxSurge (the default 25%: one pod more) on
	// this one node: the new pod listens on the same containerPort beside
	// the old one, on an address of its own, and the rollout completes.
	web2 := reg.Push(t, "web:2", critest.BusyboxImage(t, critest.ImageConfig{
		Entrypoint: []string{"/bin/sh", "-c", `echo "version 2"; exec httpd -f -p "$0" -h /www`},
		Cmd:        []string{"80"},
	}))
	s.kubectl(t, "set", "image", "deployment/web-a", "web="+web2)
	waitFor(t, 120*time.Second, "web-a rolled out", func() error {
		out, err := s.kubectlErr(t, "get", "pods", "-l", "app=web-a", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.spec.containers[0].image} {.status.containerStatuses[0].ready} {.status.podIP}{"\n"}{end}`)
		f := strings.Fields(out)
		if err != nil || len(f) != 4 || f[0] == pods["web-a"] || f[1] != web2 || f[2] != "true" {
			return fmt.Errorf("pods of web-a: %q, %v", out, err)
		}
		if body, err := httpGet("http://" + f[3] + ":8080/index.html"); err != nil || body != "hello from an image\n" {
			return fmt.Errorf("GET the new pod: %q, %v", body, err)
		}
		return nil
	})
}
