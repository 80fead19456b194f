package testtool

import (
	"net"
	"sync"
	"testing"
)

// StallProxy passes TCP between its clients and a target until Stall,
// after which it holds every byte with the connections left open, as a
// server stopped with SIGSTOP or cut off by a partition does; Resume lets
// them through again. Hang instead makes the connections it holds pass
// nothing ever again, as connections to a peer that hung do, while new
// ones pass. Its clients dial Addr.
type StallProxy struct {
	Addr string

	l      net.Listener
	target string
	mu     sync.Mutex
	open   chan struct{} // closed while bytes pass
	// hung is closed by Hang for the connections accepted before it.
	hung  chan struct{}
	conns []net.Conn
	wg    sync.WaitGroup
}

// StartStallProxy proxies to target (host:port) on a loopback port until
// the test ends.
func StartStallProxy(t testing.TB, target string) *StallProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &StallProxy{Addr: l.Addr().String(), l: l, target: target, open: make(chan struct{}), hung: make(chan struct{})}
	close(p.open)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		p.Resume()
		l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *StallProxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		hung := p.hung
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(up, c, hung) })
		p.wg.Go(func() { p.pipe(c, up, hung) })
	}
}

// pipe copies src to dst, each read held while the proxy stalls, and
// dropped once hung is closed.
func (p *StallProxy) pipe(dst, src net.Conn, hung <-chan struct{}) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-hung:
			n = 0
		default:
		}
		if n > 0 {
			p.mu.Lock()
			open := p.open
			p.mu.Unlock()
			<-open
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Stall holds every byte from now on.
func (p *StallProxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default:
	}
}

// Resume lets the bytes held, and those after them, through.
func (p *StallProxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// Hang makes every connection held now pass nothing more, for good,
// though it stays open; connections made after pass.
func (p *StallProxy) Hang() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.hung)
	p.hung = make(chan struct{})
}
