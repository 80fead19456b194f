package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// runGRPC asks the gRPC health checking service (grpc.health.v1.Health)
// at the pod's address and port for the action's service, as the
// kubelet's gRPC probe: plain text, no credentials, and only SERVING is
// a success.
func runGRPC(ctx context.Context, a *corev1.GRPCAction, t Target) (Result, string) {
	addr := net.JoinHostPort(t.Host, strconv.Itoa(int(a.Port)))
	var service string
	if a.Service != nil {
		service = *a.Service
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("berth-probe/1.0"))
	if err != nil {
		return Unknown, fmt.Sprintf("grpc: %s: %v", addr, err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		switch st, _ := status.FromError(err); {
		case st.Code() == codes.Unimplemented:
			return Failure, fmt.Sprintf("grpc %s: the server does not implement the gRPC health protocol (grpc.health.v1.Health): %s", addr, st.Message())
		case st.Code() == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded):
			return Failure, fmt.Sprintf("grpc %s: timeout: the health check did not complete in time", addr)
		}
		return Failure, fmt.Sprintf("grpc %s: health check failed: %v", addr, err)
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("grpc %s: service %q unhealthy (responded with %q)", addr, service, s.String())
	}
	return Success, fmt.Sprintf("grpc %s: service %q healthy", addr, service)
}
