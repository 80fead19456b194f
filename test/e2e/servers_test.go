package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
	"github.com/berth-dev/berth/testtool"
)

// TestOneAddressForSeveralServers gives the three servers of one etcd a
// stable address, as an operator does with a TCP load balancer: each is
// started with --tls-san for the balancer's address and name, and writes
// an admin.kubeconfig that names the balancer and lists itself after it.
// Then the server that the CLI and an agent use, the leader, is killed:
// `berth`, from a kubeconfig that lists the servers in berth's extension,
// and the agent, given every server, carry on against another; kubectl,
// which takes one URL, carries on through the balancer; and a client
// that dials the balancer by its DNS name (resolved to loopback by the
// test, never by DNS) verifies the servers' certificate for that name.
func TestOneAddressForSeveralServers(t *testing.T) {
	const lbIP, lbName = "127.0.0.9", "berth-lb.test"
	ep := etcdtest.Start(t)
	c := newCluster(t, []string{"--store", "etcd://" + strings.TrimPrefix(ep, "http://"),
		"--tls-san", lbIP, "--tls-san", lbName})
	urls := make([]string, len(c.servers))
	backends := make([]string, len(c.servers))
	for i, s := range c.servers {
		urls[i] = s.url
		backends[i] = strings.TrimPrefix(s.url, "https://")
	}
	// The balancer listens on each server's port at its own address, as
	// admin.kubeconfig names it, and sends a connection to the first
	// server that takes it.
	for _, b := range backends {
		_, port, _ := net.SplitHostPort(b)
		startBalancer(t, net.JoinHostPort(lbIP, port), backends)
	}

	second := c.servers[1]
	cfg, err := client.LoadKubeconfig(second.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(backends[1])
	lbURL := "https://" + net.JoinHostPort(lbIP, port)
	if want := lbURL + "," + second.url; cfg.Server != want {
		t.Fatalf("admin.kubeconfig's servers %q, want %q", cfg.Server, want)
	}

	// The CLI's kubeconfig names the leader for kubectl and the others
	// for berth; the agent knows all three and starts with the leader.
	lead := c.leader(t)
	if lead != c.servers[0] {
		t.Fatalf("%s leads, not the first server", lead.url)
	}
	kubeconfig := testtool.WriteKubeconfig(t, testtool.Kubeconfig{Server: urls[0], Servers: urls[1:], CAFile: filepath.Join(second.dataDir, "tls", "ca.crt"),
		Token: cfg.Token, Namespace: "default"})
	a := startAgent(t, second, "lb-node", "127.0.0.41", "--server", strings.Join(urls, ","))
	cm := func(name string) string {
		p := filepath.Join(t.TempDir(), name+".yaml")
		if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+"}\ndata: {k: v}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if out, stderr, code := run(t, "--kubeconfig", kubeconfig, "apply", "-f", cm("before")); code != 0 {
		t.Fatalf("berth apply before the fault: exit %d %s%s", code, out, stderr)
	}

	// The leader dies.
	killed := time.Now()
	lead.signal(syscall.SIGKILL)
	<-lead.done

	// berth passes the dead server and rides through the election: its
	// create is answered 503 with Retry-After until a leader is back.
	out, stderr, code := run(t, "--kubeconfig", kubeconfig, "--request-timeout", "40s", "apply", "-f", cm("after"))
	if code != 0 || out != "configmap/after created\n" {
		t.Fatalf("berth apply after the leader died: exit %d %q %s", code, out, stderr)
	}
	if out, stderr, code := run(t, "--kubeconfig", kubeconfig, "get", "configmaps", "before", "after", "-o", "name"); code != 0 || out != "configmap/before\nconfigmap/after\n" {
		t.Fatalf("berth get after the leader died: exit %d %q %s", code, out, stderr)
	}
	// kubectl, through the balancer that admin.kubeconfig names.
	if out := second.kubectl(t, "get", "configmap", "after", "-o", "name"); strings.TrimSpace(out) != "configmap/after" {
		t.Fatalf("kubectl through the balancer: %q", out)
	}
	// The balancer by its name: the certificate covers it.
	tr, err := client.NewTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && host == lbName {
			addr = net.JoinHostPort(lbIP, port) // the test's resolver: no DNS
		}
		return dial(ctx, network, addr)
	}
	byName, err := client.New(&client.Config{Server: "https://" + net.JoinHostPort(lbName, port), Token: cfg.Token, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := byName.Get(context.Background(), api.MustLookupResource("configmaps"), "default", "after"); err != nil {
		t.Fatalf("a client of the balancer's name: %v", err)
	}
	tr.CloseIdleConnections()

	// The agent moved on: its heartbeats go on past the death of the
	// server it used.
	waitFor(t, 30*time.Second, "heartbeats of the agent after the leader died", func() error {
		l, err := second.getJSON(t, "lease", a.name, "-n", "kube-node-lease")
		if err != nil {
			return err
		}
		beat, err := time.Parse(time.RFC3339Nano, fmt.Sprint(field(l, "spec.renewTime")))
		if err != nil || beat.Before(killed.Add(2*time.Second)) {
			return fmt.Errorf("lease renewed at %v", field(l, "spec.renewTime"))
		}
		return nil
	})
	waitNodeReady(t, second, a.name, "True")
}

// startBalancer is a TCP load balancer on addr, as an operator puts in
// front of the servers: each connection goes to the first of backends
// that accepts it.
func startBalancer(t *testing.T, addr string, backends []string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  = map[net.Conn]bool{}
		closed bool
	)
	track := func(c net.Conn, open bool) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case open && closed:
			c.Close()
		case open:
			conns[c] = true
		default:
			delete(conns, c)
		}
	}
	wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer in.Close()
				var out net.Conn
				for _, b := range backends {
					if out, err = net.DialTimeout("tcp", b, time.Second); err == nil {
						break
					}
				}
				if out == nil {
					return
				}
				defer out.Close()
				track(in, true)
				track(out, true)
				defer track(in, false)
				defer track(out, false)
				done := make(chan struct{}, 2)
				pipe := func(dst, src net.Conn) {
					_, _ = io.Copy(dst, src)
					done <- struct{}{}
				}
				go pipe(out, in)
				go pipe(in, out)
				<-done
				in.Close()
				out.Close()
				<-done
			})
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}
