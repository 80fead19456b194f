package agent_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent"
	"github.com/berth-dev/berth/agent/runtime/exec"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// staticAgent runs agents of node name on one data dir with a static pod
// that sleeps: each call to start runs one until the returned stop.
type staticAgent struct {
	t       *testing.T
	c       *cluster
	clk     *clocktesting.FakeClock
	name    string
	dataDir string
	dir     string
}

func newStaticAgent(t *testing.T, c *cluster, name string) *staticAgent {
	s := &staticAgent{t: t, c: c, clk: clocktesting.NewFakeClock(time.Now().Truncate(time.Second)),
		name: name, dataDir: t.TempDir(), dir: t.TempDir()}
	t.Cleanup(func() { reap(t, s.dataDir) })
	manifest := `apiVersion: v1
kind: Pod
metadata: {name: sleeper, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: berth
    command: [/bin/sleep, "3600"]
`
	if err := os.WriteFile(filepath.Join(s.dir, "sleeper.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *staticAgent) start() (stop func()) {
	token, ca := s.c.JoinSecrets(s.t)
	a, err := agent.New(agent.Config{
		Server: s.c.URL, JoinToken: token, CAData: ca,
		NodeName: s.name, NodeIP: "127.0.0.1", Listen: "127.0.0.1:0",
		DataDir: s.dataDir, ManifestDir: s.dir, Clock: s.clk, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			s.t.Errorf("agent: %v", err)
		}
	}
	s.t.Cleanup(stop)
	return stop
}

// mirror waits until the static pod's mirror satisfies cond, stepping the
// clock by the workers' retry period meanwhile.
func (s *staticAgent) mirror(what string, cond func(*api.Pod) error) *api.Pod {
	s.t.Helper()
	var p *api.Pod
	testtool.WaitFor(s.t, 30*time.Second, what, func() error {
		s.clk.Step(5 * time.Second)
		obj, err := s.c.Admin.Get(context.Background(), api.KindOf(&api.Pod{}), "default", "sleeper-"+s.name)
		if err != nil {
			return err
		}
		p = obj.(*api.Pod)
		return cond(p)
	})
	return p
}

func running(p *api.Pod) error {
	if p.Status.Phase != api.PodRunning || p.Status.PodIP == "" {
		return fmt.Errorf("phase %q, IP %q", p.Status.Phase, p.Status.PodIP)
	}
	return nil
}

// reap stops what the agents of dataDir left running.
func reap(t *testing.T, dataDir string) {
	rt, err := exec.New(exec.Options{Root: filepath.Join(dataDir, "pods")})
	if err != nil {
		t.Error(err)
		return
	}
	defer rt.Close()
	ctx := context.Background()
	runs, _ := rt.List(ctx)
	for _, r := range runs {
		_ = rt.Stop(ctx, r.ID, 0)
		_ = rt.Remove(ctx, r.ID)
	}
}

// TestMirrorStatusAfterAgentRestart: an agent restarted on its data dir
// takes its static pod's container back and reports it on the mirror pod
// again, Running with its IP: over a status left stale meanwhile, and on a
// mirror deleted meanwhile and posted anew.
func TestMirrorStatusAfterAgentRestart(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	s := newStaticAgent(t, c, "n1")
	stop := s.start()
	first := s.mirror("the mirror Running", running)
	stop()

	// Only the node writes a mirror's status.
	stale := first.DeepCopy()
	stale.Status = api.PodStatus{Phase: api.PodPending}
	stale.ResourceVersion = "" // over the status last written, whichever it was
	if _, err := c.KeptCredential(t, s.dataDir).UpdateStatus(ctx, stale); err != nil {
		t.Fatal(err)
	}
	stop = s.start()
	s.mirror("the mirror Running again", running)
	stop()

	if _, err := c.Admin.Delete(ctx, api.KindOf(&api.Pod{}), "default", first.Name, nil); err != nil {
		t.Fatal(err)
	}
	s.start()
	s.mirror("the new mirror Running", func(p *api.Pod) error {
		if p.UID == first.UID {
			return fmt.Errorf("still the old mirror")
		}
		return running(p)
	})
}

// TestDeletedMirrorPostedAgain: `berth delete pod` of a mirror pod (a
// graceful deletion, the pod being bound) does not leave it Terminating:
// the agent deletes it and posts it again at once, with the status of its
// static pod, which runs on.
func TestDeletedMirrorPostedAgain(t *testing.T) {
	c := startCluster(t)
	s := newStaticAgent(t, c, "n1")
	s.start()
	first := s.mirror("the mirror Running", running)
	if _, err := c.Admin.Delete(context.Background(), api.KindOf(&api.Pod{}), "default", first.Name, nil); err != nil {
		t.Fatal(err)
	}
	again := s.mirror("a new mirror Running", func(p *api.Pod) error {
		if p.UID == first.UID {
			return fmt.Errorf("still the deleted mirror (deletionTimestamp %v)", p.DeletionTimestamp)
		}
		return running(p)
	})
	if again.DeletionTimestamp != nil {
		t.Errorf("the new mirror is being deleted: %v", again.DeletionTimestamp)
	}
	if again.Status.ContainerStatuses[0].RestartCount != 0 || again.Status.ContainerStatuses[0].ContainerID != first.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("the static pod's container changed: %+v, was %+v", again.Status.ContainerStatuses[0], first.Status.ContainerStatuses[0])
	}
}
