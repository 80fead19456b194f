package probe

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/berth-dev/berth/api"
)

// serveGRPC serves a gRPC server on loopback until the end of the test;
// with health, grpc.health.v1.Health answers SERVING for "" and
// NOT_SERVING for "down".
func serveGRPC(t *testing.T, withHealth bool) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	if withHealth {
		h := health.NewServer()
		h.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
		healthpb.RegisterHealthServer(srv, h)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// TestGRPC probes real gRPC servers as the kubelet does: SERVING is a
// success; NOT_SERVING, a server without the health service, a closed
// port and a timeout are failures that say so.
func TestGRPC(t *testing.T) {
	port := serveGRPC(t, true)
	bare := serveGRPC(t, false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := int32(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	// A listener that never answers: the probe's timeout ends it.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	silent := int32(mute.Addr().(*net.TCPAddr).Port)

	down := "down"
	for _, c := range []struct {
		name   string
		action corev1.GRPCAction
		want   Result
		out    string
	}{
		{"serving", corev1.GRPCAction{Port: port}, Success, "healthy"},
		{"not serving", corev1.GRPCAction{Port: port, Service: &down}, Failure, `service "down" unhealthy (responded with "NOT_SERVING")`},
		{"no health service", corev1.GRPCAction{Port: bare}, Failure, "does not implement the gRPC health protocol"},
		{"closed port", corev1.GRPCAction{Port: closed}, Failure, "connection refused"},
		{"no answer", corev1.GRPCAction{Port: silent}, Failure, "timeout"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		got, out := Run(ctx, api.ProbeHandler{GRPC: &c.action}, Target{Host: "127.0.0.1"})
		cancel()
		if got != c.want || !strings.Contains(out, c.out) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, got, out, c.want, c.out)
		}
	}
}
