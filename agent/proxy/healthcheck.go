package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// HealthChecks serve the healthCheckNodePort of each LoadBalancer Service
// of externalTrafficPolicy Local on the node, as kube-proxy does: an
// external load balancer asks each node, and sends the Service's traffic
// only to the nodes that answer 200, those with a ready endpoint of the
// Service of their own (a node without one would drop it, the policy
// keeping the client's address). Any path answers, with the count.
type HealthChecks struct {
	// addr is the node address the ports are served on.
	addr string
	log  *slog.Logger

	mu      sync.Mutex
	servers map[types.NamespacedName]*healthServer
}

// healthServer is one Service's port and what it answers.
type healthServer struct {
	port  int32
	srv   *http.Server
	count int
}

// NewHealthChecks serves the health check node ports on addr, the
// node's address.
func NewHealthChecks(addr string, log *slog.Logger) *HealthChecks {
	return &HealthChecks{addr: addr, log: log, servers: map[types.NamespacedName]*healthServer{}}
}

// healthCheckPorts are the health check node ports the Services hold,
// each with its count of ready endpoints on node.
func healthCheckPorts(node string, services []*api.Service, slices []*api.EndpointSlice) map[types.NamespacedName]healthState {
	out := map[types.NamespacedName]healthState{}
	for _, svc := range services {
		if svc.Spec.HealthCheckNodePort == 0 || !api.NeedsHealthCheckNodePort(svc) {
			continue
		}
		out[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}] = healthState{port: svc.Spec.HealthCheckNodePort}
	}
	for _, es := range slices {
		key := types.NamespacedName{Namespace: es.Namespace, Name: es.Labels[api.LabelServiceName]}
		st, ok := out[key]
		if !ok {
			continue
		}
		for _, e := range es.Endpoints {
			if e.NodeName != nil && *e.NodeName == node && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				st.local++
			}
		}
		out[key] = st
	}
	return out
}

// healthState is a Service's health check port and its ready local
// endpoints.
type healthState struct {
	port  int32
	local int
}

// Sync serves want: a port opened for each Service new to it, closed for
// each gone or moved, and each answer's count updated. A port that cannot
// be opened is an error for it alone; the others are served.
func (h *HealthChecks) Sync(want map[types.NamespacedName]healthState) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, s := range h.servers {
		if w, ok := want[key]; !ok || w.port != s.port {
			_ = s.srv.Close()
			delete(h.servers, key)
		}
	}
	var errs []error
	for key, w := range want {
		if s, ok := h.servers[key]; ok {
			s.count = w.local
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(h.addr, strconv.Itoa(int(w.port))))
		if err != nil {
			errs = append(errs, fmt.Errorf("health check node port of %s: %w", key, err))
			continue
		}
		s := &healthServer{port: w.port, count: w.local}
		s.srv = &http.Server{Handler: h.handler(key, s), ReadHeaderTimeout: 5 * time.Second}
		h.servers[key] = s
		go func() {
			if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				h.log.Error("health check node port", "service", key, "err", err)
			}
		}()
	}
	return errors.Join(errs...)
}

// handler answers as kube-proxy's service health server: 200 with a
// ready local endpoint, 503 without, the count in the body and in
// X-Load-Balancing-Endpoint-Weight.
func (h *HealthChecks) handler(key types.NamespacedName, s *healthServer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.mu.Lock()
		n := s.count
		h.mu.Unlock()
		body, _ := json.Marshal(map[string]any{
			"service":             map[string]string{"namespace": key.Namespace, "name": key.Name},
			"localEndpoints":      n,
			"serviceProxyHealthy": true,
		})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(n))
		if n == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = w.Write(body)
	})
}

// Close stops serving every port.
func (h *HealthChecks) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, s := range h.servers {
		_ = s.srv.Shutdown(context.Background())
		delete(h.servers, key)
	}
}
