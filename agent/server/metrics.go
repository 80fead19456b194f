package server

import (
	"encoding/json"
	"net/http"
)

// serveMetrics answers the node's resource metrics as JSON; 503 until
// there are two samples to make them from.
func (s *containerServer) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if s.opts.Metrics == nil {
		http.Error(w, "this agent keeps no resource metrics", http.StatusNotFound)
		return
	}
	m, ok := s.opts.Metrics()
	if !ok {
		http.Error(w, "no resource metrics yet: the agent samples every few seconds", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}
