package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/berth-dev/berth/agent/server"
	"github.com/berth-dev/berth/api"
)

// TestMetricsEndpoint: the container server answers the API server with
// the latest resource metrics as JSON, 503 before there are any, and
// others not at all.
func TestMetricsEndpoint(t *testing.T) {
	var latest *api.ResourceMetrics
	f := startContainerServer(t, server.Options{
		Metrics: func() (api.ResourceMetrics, bool) {
			if latest == nil {
				return api.ResourceMetrics{}, false
			}
			return *latest, true
		}})
	srv := f.srv
	c := f.client(t, api.APIServerClientName)
	if code, body := logServerGet(t, c, srv.URL+api.ResourceMetricsPath); code != http.StatusServiceUnavailable {
		t.Errorf("before any sample: %d %s", code, body)
	}
	latest = &api.ResourceMetrics{Timestamp: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Window: 10 * time.Second,
		Node: api.ResourceUsage{NanoCores: 5e8, MemoryBytes: 1 << 30},
		Pods: []api.PodMetrics{{Namespace: "default", Name: "web", Containers: []api.ContainerMetrics{{Name: "app", ResourceUsage: api.ResourceUsage{NanoCores: 1e6, MemoryBytes: 1 << 20}}}}}}
	code, body := logServerGet(t, c, srv.URL+api.ResourceMetricsPath)
	var got api.ResourceMetrics
	if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil || got.Node != latest.Node || len(got.Pods) != 1 || got.Pods[0].Containers[0] != latest.Pods[0].Containers[0] {
		t.Errorf("metrics: %d %s (%v)", code, body, err)
	}
	if code, _ := logServerGet(t, f.client(t, "system:node:n2"), srv.URL+api.ResourceMetricsPath); code != http.StatusForbidden {
		t.Errorf("another node's certificate: %d, want 403", code)
	}
}
