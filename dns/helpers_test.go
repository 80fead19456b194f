package dns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// recorder is a dns.ResponseWriter that keeps what is written, or, with
// fail set, fails every write as a socket refusing a datagram does.
type recorder struct {
	udp  bool
	fail error
	out  [][]byte
}

func (r *recorder) LocalAddr() net.Addr {
	if r.udp {
		return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}
	}
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}
}

func (r *recorder) RemoteAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000}
}

func (r *recorder) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		return err
	}
	_, err = r.Write(b)
	return err
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.fail != nil {
		return 0, r.fail
	}
	r.out = append(r.out, append([]byte(nil), b...))
	return len(b), nil
}

func (r *recorder) Close() error        { return nil }
func (r *recorder) TsigStatus() error   { return nil }
func (r *recorder) TsigTimersOnly(bool) {}
func (r *recorder) Hijack()             {}

func newStore(t testing.TB, opts store.Options) *store.Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	s, err := store.New(store.Memory{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// running is a server started by a test.
type running struct {
	*Server
	cancel context.CancelFunc
	done   chan error
}

// startServer starts a server on ephemeral ports of 127.0.0.1 over st and
// stops it when the test ends. hold, if set, holds the follower back
// before it lists.
func startServer(t testing.TB, st *store.Store, opts Options, hold func(context.Context)) *running {
	t.Helper()
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.MetricsListen == "" {
		opts.MetricsListen = "127.0.0.1:0"
	}
	if opts.HealthListen == "" {
		opts.HealthListen = "127.0.0.1:0"
	}
	if opts.Upstream == "" {
		opts.Upstream = UpstreamNone
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	s, err := New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.follower.beforeList = hold
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Server: s, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
	if hold == nil {
		waitFor(t, 5*time.Second, "the server to sync", s.Ready)
	}
	return r
}

// ask asks one question over network ("udp" or "tcp"); size > 0 adds an
// EDNS0 OPT record with that UDP size.
func ask(t testing.TB, network, addr, name string, qtype uint16, size uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	if size > 0 {
		m.SetEdns0(size, false)
	}
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	resp, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s %s: %v", network, name, dns.TypeToString[qtype], err)
	}
	return resp
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, d, what, func() error {
		if !cond() {
			return errors.New("condition not met")
		}
		return nil
	})
}

// put creates or replaces objects in the store.
func put(t testing.TB, st *store.Store, objs ...api.Object) {
	t.Helper()
	_, err := st.Txn(context.Background(), func(tx *store.Txn) error {
		for _, o := range objs {
			k := api.KindOf(o)
			old, err := tx.Get(k, o.GetNamespace(), o.GetName())
			switch {
			case store.IsNotFound(err):
				_, err = tx.Create(o)
			case err == nil:
				o.SetResourceVersion(old.GetResourceVersion())
				_, err = tx.Update(o)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// manyEndpoints is a service's Endpoints with n ready pods on distinct IPs.
func manyEndpoints(ns, name string, n int, base int) *api.Endpoints {
	var addrs []api.EndpointAddress
	for i := range n {
		ip := base + i
		addrs = append(addrs, at(fmt.Sprintf("%s-%d", name, i), fmt.Sprintf("10.%d.%d.%d", ip>>16&255, ip>>8&255, ip&255)))
	}
	return eps(ns, name, subset(ready(addrs...), ports(api.EndpointPort{Name: "http", Port: 8080, Protocol: api.ProtocolTCP})))
}

// stubUpstream is a DNS server on 127.0.0.1 (UDP and TCP, one port) that
// answers with handle.
func stubUpstream(t testing.TB, handle dns.HandlerFunc) string {
	t.Helper()
	pc, ln := testtool.LoopbackPair(t)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the shutdowns below: cleanups run last first
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: handle}, {Listener: ln, Handler: handle}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		wg.Go(func() { _ = srv.ActivateAndServe() })
		<-started
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return pc.LocalAddr().String()
}
