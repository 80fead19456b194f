package cri

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/agent/runtime"
)

// PortForward implements runtime.PortForwarder: the runtime's streaming
// server forwards to the pod's ports from inside its network namespace,
// as it does for the kubelet, spoken to over SPDY (portforward.k8s.io).
func (r *Runtime) PortForward(ctx context.Context, podUID string) (runtime.PortForwardSession, error) {
	all, err := r.rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{labelManaged: "true", labelPodUID: podUID},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil {
		return nil, fmt.Errorf("cri: sandboxes of pod %s: %w", podUID, err)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("pod %s has no running sandbox: %w", podUID, runtime.ErrNotFound)
	}
	resp, err := r.rs.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: all[len(all)-1].Id})
	if err != nil {
		return nil, fmt.Errorf("cri: port-forward to pod %s: %w", podUID, err)
	}
	u, err := url.Parse(resp.Url)
	if err != nil {
		return nil, fmt.Errorf("cri: port-forward url %q: %w", resp.Url, err)
	}
	tr, up, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		return nil, err
	}
	conn, _, err := spdy.NewDialer(up, &http.Client{Transport: tr}, http.MethodPost, u).Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		return nil, fmt.Errorf("cri: port-forward to pod %s: %w", podUID, err)
	}
	return &forwardSession{conn: conn}, nil
}

// forwardSession is one SPDY connection to the streaming server; each
// forwarded connection is a pair of its streams, "error" and "data".
type forwardSession struct {
	conn httpstream.Connection
	next atomic.Int64
}

func (s *forwardSession) Open(port uint16) (runtime.PortStream, error) {
	h := http.Header{}
	h.Set(corev1.PortHeader, strconv.Itoa(int(port)))
	h.Set(corev1.PortForwardRequestIDHeader, strconv.FormatInt(s.next.Add(1), 10))
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	errs, err := s.conn.CreateStream(h)
	if err != nil {
		return nil, fmt.Errorf("cri: port-forward error stream: %w", err)
	}
	// Nothing is sent on the error stream.
	errs.Close()
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := s.conn.CreateStream(h)
	if err != nil {
		errs.Reset()
		return nil, fmt.Errorf("cri: port-forward data stream: %w", err)
	}
	return &forwardStream{data: data, errs: errs}, nil
}

func (s *forwardSession) Close() error { return s.conn.Close() }

// forwardStream is one forwarded connection: a SPDY stream's Close ends
// its sending side alone, Reset the whole stream.
type forwardStream struct {
	data, errs httpstream.Stream
}

func (f *forwardStream) Read(p []byte) (int, error)  { return f.data.Read(p) }
func (f *forwardStream) Write(p []byte) (int, error) { return f.data.Write(p) }
func (f *forwardStream) CloseWrite() error           { return f.data.Close() }
func (f *forwardStream) Errors() io.Reader           { return f.errs }

func (f *forwardStream) Close() error {
	f.errs.Reset()
	return f.data.Reset()
}
