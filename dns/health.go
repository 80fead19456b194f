package dns

import (
	"net/http"
)

// HealthHandler serves /healthz: 200 once ready reports true (the table
// has read the store), 503 before, as kube-dns's health port does.
func HealthHandler(ready func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if !ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not synced\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}
