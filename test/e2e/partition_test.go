package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
	"github.com/berth-dev/berth/testtool"
)

// partitionTable drops everything that goes in or out of a namespace's
// LAN link, silently, as a network partition does: no refusal, no reset.
const partitionTable = `table inet partition {
	chain in { type filter hook input priority 0; policy accept; iifname "eth0" drop; }
	chain out { type filter hook output priority 0; policy accept; oifname "eth0" drop; }
}`

// TestPartitionedLeader runs three servers, each in a network namespace
// of its own on one LAN (198.18.0.0/15, made by the test), over an etcd
// in the test's namespace, and cuts the leader off the LAN with
// nftables while writers send creates through a client of all three:
// the two others elect a leader and take writes again, the cut-off one
// learns it lost (it cannot renew) and steps down; once the partition
// heals it follows the new leader, and a read through it sees every
// create the others acknowledged meanwhile. No acknowledged create is
// lost.
func TestPartitionedLeader(t *testing.T) {
	testtool.Need(t, "nsenter")
	testtool.Need(t, "nft")
	if !critest.InNetns(t) {
		return
	}
	const port = "6443"
	ips := []string{"198.18.0.11", "198.18.0.12", "198.18.0.13"}
	namespaces := make([]string, len(ips))
	for i, ip := range ips {
		namespaces[i] = lanNode(t, fmt.Sprintf("cp-%d", i), ip)
	}
	ep := etcdtest.StartOn(t, lanGateway)
	c := &cluster{}
	ns := map[*server]string{}
	for i, ip := range ips {
		dataDir := t.TempDir()
		args, url, dnsPort := serverArgs(t, dataDir, "--store", "etcd://"+strings.TrimPrefix(ep, "http://"), "--listen", ip+":"+port)
		s := &server{
			dnsPort:    dnsPort,
			process:    startProgram(t, "nsenter", append([]string{"--net=" + namespaces[i], bin}, args...)...),
			dataDir:    dataDir,
			url:        url,
			kubeconfig: filepath.Join(dataDir, "admin.kubeconfig"),
		}
		s.waitReady(t)
		c.servers = append(c.servers, s)
		ns[s] = filepath.Base(namespaces[i])
	}
	lead := c.leader(t)

	cfg, err := client.LoadKubeconfig(lead.kubeconfig)
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
	w.waitAcked(t, time.Now(), "writes before the partition")

	// nft runs nft in the leader's namespace, with stdin.
	nft := func(stdin string, args ...string) {
		t.Helper()
		cmd := exec.Command("ip", append([]string{"netns", "exec", ns[lead], "nft"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nft %s in %s: %v\n%s", strings.Join(args, " "), ns[lead], err, out)
		}
	}
	nft(partitionTable, "-f", "-")
	// From when the cut is in place: creates acknowledged before it were
	// made by the leader while it still reached etcd.
	at := time.Now()
	back := w.waitAcked(t, at, "writes through the others after the leader was cut off")
	t.Logf("writes resumed %s after the leader was cut off (load %s)", back.Sub(at).Round(time.Millisecond), loadAverage())
	waitFor(t, 30*time.Second, "the cut-off leader to step down", func() error {
		if leadsNow(lead.Output()) {
			return errors.New("it still says it leads")
		}
		return nil
	})
	var next *server
	waitFor(t, 30*time.Second, "another server to lead", func() error {
		for _, s := range c.servers {
			if s != lead && leadsNow(s.Output()) {
				next = s
				return nil
			}
		}
		return errors.New("no other server says it leads")
	})

	// Healed, the old leader follows the new one: a read through it,
	// sent after a create the others acknowledged, sees that create.
	nft("", "delete", "table", "inet", "partition")
	healed := time.Now()
	w.waitAcked(t, healed, "writes after the partition healed")
	w.mu.Lock()
	var name string
	for n, sent := range w.sent {
		if !sent.Before(healed) {
			name = n
			break
		}
	}
	w.mu.Unlock()
	only := *cfg
	only.Server = lead.url
	only.Timeout = 10 * time.Second
	through, err := client.New(&only)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a read through the healed server", func() error {
		_, err := through.Get(context.Background(), api.MustLookupResource("configmaps"), "default", name)
		return err
	})
	if !strings.Contains(lead.Output(), `"following the leader" leader=`+next.url) {
		t.Errorf("the healed server does not say it follows %s", next.url)
	}
	if n := w.lost(); n > 0 {
		t.Errorf("%d acknowledged creates are missing", n)
	}
}
