// Command grpchealth serves the gRPC health checking protocol
// (grpc.health.v1.Health) in plain text on the port of its first
// argument, for the probes of the agent's tests: the empty service is
// SERVING until a file /tmp/not-serving exists, "down" is always
// NOT_SERVING, and any other service is unknown (NotFound), as the
// reference health server answers.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// notServing turns the empty service NOT_SERVING while it exists.
const notServing = "/tmp/not-serving"

type health struct {
	healthpb.UnimplementedHealthServer
}

func (health) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	switch req.GetService() {
	case "":
		if _, err := os.Stat(notServing); err == nil {
			return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case "down":
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}, nil
	}
	return nil, status.Error(codes.NotFound, "unknown service")
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: grpchealth PORT")
		os.Exit(2)
	}
	l, err := net.Listen("tcp", ":"+os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health{})
	if err := s.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
