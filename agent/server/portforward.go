package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/berth-dev/berth/agent/runtime"
)

// kubectl port-forward speaks SPDY (portforward.k8s.io) tunnelled in a
// WebSocket: each forwarded connection is a pair of SPDY streams, "error"
// and "data", with the same requestID and the pod's port as headers.
const (
	portForwardProtocol = "SPDY/3.1+portforward.k8s.io"
	headerStreamType    = "streamType"
	headerPort          = "port"
	headerRequestID     = "requestID"
	// portForwardDialTimeout bounds reaching the pod's port.
	portForwardDialTimeout = 5 * time.Second
)

var portForwardUpgrader = websocket.Upgrader{
	Subprotocols: []string{portForwardProtocol},
	CheckOrigin:  func(*http.Request) bool { return true },
}

// PodAddresses says where a pod of this node listens: the addresses its
// ports are reached at, tried in order; false when the pod does not run
// here.
type PodAddresses func(namespace, name string) ([]string, bool)

// servePortForward forwards connections to a pod's ports for kubectl
// port-forward: GET /portForward/{namespace}/{pod}, upgraded to a
// WebSocket carrying SPDY. Pods run in the node's network, so a port is
// reached at the addresses PodAddresses gives (localhost first, as the
// kubelet dials inside the pod).
func (s *containerServer) servePortForward(w http.ResponseWriter, r *http.Request) {
	ns, pod := r.PathValue("namespace"), r.PathValue("pod")
	if s.opts.PodAddresses == nil {
		http.Error(w, "this agent does not forward ports", http.StatusNotFound)
		return
	}
	addrs, ok := s.opts.PodAddresses(ns, pod)
	if !ok {
		http.Error(w, fmt.Sprintf("pod %s/%s is not running on this node", ns, pod), http.StatusNotFound)
		return
	}
	if !websocket.IsWebSocketUpgrade(r) || !offers(r, portForwardProtocol) {
		http.Error(w, fmt.Sprintf("port-forward takes a WebSocket upgrade with protocol %s (kubectl 1.30 or later)", portForwardProtocol), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var fwd runtime.PortForwardSession
	if s.opts.PortForward != nil {
		f, err := s.opts.PortForward(ctx, ns, pod)
		if err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, runtime.ErrNotFound) {
				code = http.StatusNotFound
			}
			http.Error(w, fmt.Sprintf("port-forward to pod %s/%s: %v", ns, pod, err), code)
			return
		}
		fwd = f
	}
	if fwd == nil {
		fwd = &dialSession{ctx: ctx, addrs: addrs}
	}
	defer fwd.Close()
	ws, err := portForwardUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	tunnel := portforward.NewTunnelingConnection("port-forward", ws)
	defer tunnel.Close()
	streams := make(chan httpstream.Stream)
	conn, err := spdy.NewServerConnection(tunnel, func(st httpstream.Stream, _ <-chan struct{}) error {
		select {
		case streams <- st:
		case <-r.Context().Done():
		}
		return nil
	})
	if err != nil {
		s.opts.Logger.Warn("port-forward: SPDY over the tunnel", "pod", ns+"/"+pod, "err", err)
		return
	}
	defer conn.Close()
	pf := &portForwarder{ctx: ctx, open: fwd.Open, pairs: map[string]*streamPair{}}
	defer pf.wg.Wait()
	for {
		select {
		case st := <-streams:
			pf.add(st)
		case <-conn.CloseChan():
			return
		case <-ctx.Done():
			return
		}
	}
}

// portForwarder pairs one connection's streams and forwards each pair.
type portForwarder struct {
	ctx context.Context
	// open connects to a port of the pod.
	open  func(port uint16) (runtime.PortStream, error)
	pairs map[string]*streamPair
	wg    sync.WaitGroup
}

// streamPair is one forwarded connection's streams. A half whose other
// half never comes waits until the connection closes, which ends it.
type streamPair struct {
	data, errs httpstream.Stream
}

func (pf *portForwarder) add(st httpstream.Stream) {
	id := st.Headers().Get(headerRequestID)
	p := pf.pairs[id]
	if p == nil {
		p = &streamPair{}
		pf.pairs[id] = p
	}
	switch st.Headers().Get(headerStreamType) {
	case "data":
		p.data = st
	case "error":
		p.errs = st
	default:
		st.Reset()
		return
	}
	if p.data == nil || p.errs == nil {
		return
	}
	delete(pf.pairs, id)
	pf.wg.Go(func() { pf.forward(p) })
}

// forward copies between the data stream and a connection to the pod's
// port until either side ends; a failure to reach the port is written on
// the error stream, which kubectl prints.
func (pf *portForwarder) forward(p *streamPair) {
	defer p.errs.Close()
	defer p.data.Close()
	port, err := strconv.ParseUint(p.data.Headers().Get(headerPort), 10, 16)
	if err != nil || port == 0 {
		fmt.Fprintf(p.errs, "invalid port %q", p.data.Headers().Get(headerPort))
		return
	}
	up, err := pf.open(uint16(port))
	if err != nil {
		fmt.Fprintf(p.errs, "error forwarding port %d: %v", port, err)
		return
	}
	defer up.Close()
	errsDone := make(chan struct{})
	go func() {
		// What the runtime says went wrong, for kubectl to print.
		if e := up.Errors(); e != nil {
			_, _ = io.Copy(p.errs, e)
		}
		close(errsDone)
	}()
	go func() {
		// The user's side ending is a half close: the pod may still
		// answer what it was sent.
		_, _ = io.Copy(up, p.data)
		_ = up.CloseWrite()
	}()
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(p.data, up)
		close(copied)
	}()
	select {
	case <-copied:
		select {
		case <-errsDone:
		case <-pf.ctx.Done():
		}
	case <-pf.ctx.Done():
	}
}

// dialSession reaches a pod's ports by dialling its addresses, in order:
// the pod runs in the node's network or has an address the node routes
// to.
type dialSession struct {
	ctx   context.Context
	addrs []string
}

func (d *dialSession) Open(port uint16) (runtime.PortStream, error) {
	var err error
	dl := net.Dialer{Timeout: portForwardDialTimeout}
	for _, a := range d.addrs {
		var c net.Conn
		if c, err = dl.DialContext(d.ctx, "tcp", net.JoinHostPort(a, strconv.Itoa(int(port)))); err == nil {
			return dialStream{c.(*net.TCPConn)}, nil
		}
	}
	if err == nil {
		err = errors.New("the pod has no address")
	}
	return nil, err
}

func (d *dialSession) Close() error { return nil }

// dialStream is a TCP connection as a runtime.PortStream.
type dialStream struct{ *net.TCPConn }

func (dialStream) Errors() io.Reader { return nil }
