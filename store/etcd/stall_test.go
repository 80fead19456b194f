package etcd

import (
	"io"
	"net"
	"sync"
	"testing"
)

// stallProxy passes TCP between its clients and etcd until stall, after
// which it holds every byte, the connections open, as an etcd stopped
// with SIGSTOP or cut off by a partition does; resume lets them through.
type stallProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	open   chan struct{} // closed while bytes pass
	conns  []net.Conn
	wg     sync.WaitGroup
}

// startStallProxy proxies to etcd's client URL until the test ends, and
// returns the proxy and its own client URL.
func startStallProxy(t *testing.T, etcdURL string) (*stallProxy, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{l: l, target: etcdURL[len("http://"):], open: make(chan struct{})}
	close(p.open)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		p.resume()
		l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p, "http://" + l.Addr().String()
}

func (p *stallProxy) accept() {
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
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(up, c) })
		p.wg.Go(func() { p.pipe(c, up) })
	}
}

// pipe copies src to dst, each read held while the proxy stalls.
func (p *stallProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
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
			if err != io.EOF {
				src.Close()
			}
			return
		}
	}
}

func (p *stallProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default:
	}
}

func (p *stallProxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}
