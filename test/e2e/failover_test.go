package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
)

// TestFailoverOutage measures how long writes stop when the leader of
// three servers on one etcd, with the default election flags, is killed
// (SIGKILL), frozen (SIGSTOP) or stopped (SIGTERM): from the signal to
// the first create, sent after it, that a server acknowledges. Writers
// send creates through a client that knows all three servers, as
// `berth` and the agents do. BERTH_FAILOVER_RUNS sets the runs of each
// (default 1); the figures are logged with the load average.
func TestFailoverOutage(t *testing.T) {
	runs := 1
	if v := os.Getenv("BERTH_FAILOVER_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("BERTH_FAILOVER_RUNS=%q: want a positive number", v)
		}
		runs = n
	}
	ep := etcdtest.Start(t)
	common := []string{"--store", "etcd://" + strings.TrimPrefix(ep, "http://")}
	c := newCluster(t, common)

	cfg, err := client.LoadKubeconfig(c.servers[0].kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	urls := make([]string, len(c.servers))
	for i, s := range c.servers {
		urls[i] = s.url
	}
	cfg.Server = strings.Join(urls, ",")
	cfg.Timeout = 2 * time.Second
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := startWriters(t, cl, 4)

	outages := map[syscall.Signal][]time.Duration{}
	signals := []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGTERM}
	for run := range runs {
		for _, sig := range signals {
			lead := c.leader(t)
			w.waitAcked(t, time.Now(), "writes before the fault")
			at := time.Now()
			lead.signal(sig)
			since := at
			if sig == syscall.SIGSTOP {
				// Only creates sent once every thread has stopped
				// count: one the leader answered as the signal
				// came would end the outage at once.
				lead.waitStopped(t)
				since = time.Now()
			}
			back := w.waitAcked(t, since, fmt.Sprintf("writes after %s of the leader", sig))
			outages[sig] = append(outages[sig], back.Sub(at))
			t.Logf("run %d, %s of the leader: writes resumed after %s (load %s)", run+1, sig, back.Sub(at).Round(time.Millisecond), loadAverage())
			c.recover(t, lead, sig)
		}
	}
	for _, sig := range signals {
		d := outages[sig]
		slices.Sort(d)
		t.Logf("%s: p50 %s, max %s over %d runs", sig, d[len(d)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond), len(d))
	}
	if n := w.lost(); n > 0 {
		t.Errorf("%d acknowledged creates are missing", n)
	}
}

// cluster is three servers over one etcd.
type cluster struct {
	common  []string
	servers []*server
}

func newCluster(t *testing.T, common []string) *cluster {
	c := &cluster{common: common}
	for i := range 3 {
		s := startServer(t, common...)
		c.servers = append(c.servers, s)
		if i == 0 {
			waitFor(t, 30*time.Second, "the first server to lead", func() error {
				if !strings.Contains(s.Output(), "leading the cluster") {
					return errors.New("not yet")
				}
				return nil
			})
		}
	}
	return c
}

// leadsNow says whether a server's output says last that it leads:
// "leading the cluster" after any "stepping down".
func leadsNow(out string) bool {
	lead := strings.LastIndex(out, "leading the cluster")
	return lead >= 0 && lead > strings.LastIndex(out, "stepping down")
}

// leader is the server that leads: the one whose last word on it is
// "leading the cluster", among those running.
func (c *cluster) leader(t *testing.T) *server {
	t.Helper()
	var lead *server
	waitFor(t, 30*time.Second, "a server to lead", func() error {
		for _, s := range c.servers {
			select {
			case <-s.done:
				continue
			default:
			}
			if leadsNow(s.Output()) {
				lead = s
				return nil
			}
		}
		return errors.New("none leads")
	})
	return lead
}

// signal sends sig to the server's process group, and does not wait.
func (s *server) signal(sig syscall.Signal) {
	syscall.Kill(-s.cmd.Process.Pid, sig)
}

// waitStopped waits until every thread of the server's process has
// stopped (SIGSTOP).
func (s *server) waitStopped(t *testing.T) {
	t.Helper()
	waitFor(t, 10*time.Second, "the server's threads to stop", func() error {
		stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", s.cmd.Process.Pid))
		if err != nil || len(stats) == 0 {
			return fmt.Errorf("no threads: %v", err)
		}
		for _, p := range stats {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			// pid (comm) state …: the state follows the last ')'.
			if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) == 0 || f[0] != "T" {
				return fmt.Errorf("%s: not stopped", p)
			}
		}
		return nil
	})
}

// recover brings back the server a fault took out: a frozen one is let
// go on (deposed, it steps down and follows), and one that stopped is
// started again on its data dir and address, as systemd would.
func (c *cluster) recover(t *testing.T, s *server, sig syscall.Signal) {
	t.Helper()
	if sig == syscall.SIGSTOP {
		s.signal(syscall.SIGCONT)
		// Deposed while frozen, it says so once it runs again: until
		// then it would be taken for the leader. (Frozen for less than
		// its lease, it leads on.)
		waitFor(t, 30*time.Second, "one server to say it leads", func() error {
			n := 0
			for _, o := range c.servers {
				if leadsNow(o.Output()) {
					n++
				}
			}
			if n != 1 {
				return fmt.Errorf("%d say they lead", n)
			}
			return nil
		})
		return
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not stop after %s", sig)
	}
	back := startServerIn(t, s.dataDir, append(c.common, "--listen", strings.TrimPrefix(s.url, "https://"))...)
	for i, o := range c.servers {
		if o == s {
			c.servers[i] = back
		}
	}
}

// writers create ConfigMaps without pause and remember what was
// acknowledged, and when.
type writers struct {
	cl    *client.Client
	mu    sync.Mutex
	acked map[string]time.Time // name → when the create that was sent at it was acknowledged
	sent  map[string]time.Time
}

func startWriters(t *testing.T, cl *client.Client, n int) *writers {
	w := &writers{cl: cl, acked: map[string]time.Time{}, sent: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for j := 0; ctx.Err() == nil; j++ {
				name := fmt.Sprintf("w%d-%d", i, j)
				start := time.Now()
				_, err := cl.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
				if err != nil {
					// Paced, so that a server refusing at once
					// is not asked thousands of times a second.
					select {
					case <-ctx.Done():
					case <-time.After(20 * time.Millisecond):
					}
					continue
				}
				w.mu.Lock()
				w.sent[name], w.acked[name] = start, time.Now()
				w.mu.Unlock()
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return w
}

// waitAcked waits for a create sent at or after since to be acknowledged
// and returns when the first was.
func (w *writers) waitAcked(t *testing.T, since time.Time, what string) time.Time {
	t.Helper()
	var first time.Time
	waitFor(t, 90*time.Second, what, func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		for name, sent := range w.sent {
			if !sent.Before(since) && (first.IsZero() || w.acked[name].Before(first)) {
				first = w.acked[name]
			}
		}
		if first.IsZero() {
			return errors.New("none acknowledged yet")
		}
		return nil
	})
	return first
}

// lost counts the acknowledged creates no server holds.
func (w *writers) lost() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := api.MustLookupResource("configmaps")
	objs, _, err := w.cl.WithTimeout(time.Minute).List(context.Background(), k, "default", client.ListOptions{})
	if err != nil {
		return len(w.acked)
	}
	have := map[string]bool{}
	for _, o := range objs {
		have[o.GetName()] = true
	}
	n := 0
	for name := range w.acked {
		if !have[name] {
			n++
		}
	}
	return n
}

// loadAverage is the machine's load average over the last minute.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}
