package etcd

import (
	"context"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/store/etcd/etcdtest"
)

// stallingProxy passes TCP connections through to etcd until stall: then
// the connections it holds pass nothing more and stay open, as those to
// a peer that hangs do, and the ones made after pass again.
type stallingProxy struct {
	l      net.Listener
	target string
	wg     sync.WaitGroup

	mu      sync.Mutex
	conns   []net.Conn
	stalled chan struct{} // closed by stall, for the connections held then
	closed  bool
}

// newStallingProxy proxies the etcd at endpoint until the test ends, and
// returns it with its own endpoint.
func newStallingProxy(t *testing.T, endpoint string) (*stallingProxy, string) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallingProxy{l: l, target: u.Host, stalled: make(chan struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p, "http://" + l.Addr().String()
}

func (p *stallingProxy) accept() {
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		p.conns = append(p.conns, in, out)
		stalled := p.stalled
		p.mu.Unlock()
		p.wg.Go(func() { pass(out, in, stalled) })
		p.wg.Go(func() { pass(in, out, stalled) })
	}
}

// pass copies from src to dst until either closes, and once stalled is
// closed reads on and passes nothing.
func pass(dst, src net.Conn, stalled <-chan struct{}) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			dst.Close()
			return
		}
		select {
		case <-stalled:
			continue
		default:
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			src.Close()
			return
		}
	}
}

// stall makes every connection held now hang.
func (p *stallingProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.stalled)
	p.stalled = make(chan struct{})
}

func (p *stallingProxy) close() {
	p.l.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// A follower whose connection to etcd hangs, passing nothing but never
// failing, drops it once etcd stops answering its pings and follows on
// over a new one, rather than serving what it had for as long as the
// connection hangs.
func TestFollowerOverAHungConnectionFollowsOn(t *testing.T) {
	ep := etcdtest.Start(t)
	_, lead := leader(t, ep, nil)
	p, via := newStallingProxy(t, ep)
	follower := newStore(t, open(t, via, func(o *Options) { o.keepAlive = 10 * time.Second }))
	writeSome(t, lead, 1, "a")
	caughtUp(t, lead, follower)
	p.stall()
	writeSome(t, lead, 2, "b")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := follower.WaitRevision(ctx, lead.Revision()); err != nil {
		t.Fatalf("the follower is at revision %d, the leader at %d: %v", follower.Revision(), lead.Revision(), err)
	}
	caughtUp(t, lead, follower)
}
