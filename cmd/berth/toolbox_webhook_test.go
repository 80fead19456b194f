package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func review(op, labels string) string {
	obj := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":` + labels + `}}`
	field := "object"
	if op == "DELETE" {
		field = "oldObject"
	}
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","kind":{"group":"","version":"v1","kind":"ConfigMap"},` +
		`"resource":{"group":"","version":"v1","resource":"configmaps"},"name":"cm","operation":"` + op + `","` + field + `":` + obj + `}}`
}

func TestWebhookAnswers(t *testing.T) {
	h := webhookHandler(slog.New(slog.NewTextHandler(io.Discard, nil)), "deny", "true")
	for _, c := range []struct {
		name, method, body string
		code               int
		allowed            bool
	}{
		{"labelled", "POST", review("CREATE", `{"deny":"true"}`), http.StatusOK, false},
		{"labelled otherwise", "POST", review("CREATE", `{"deny":"false"}`), http.StatusOK, true},
		{"unlabelled", "POST", review("UPDATE", `{}`), http.StatusOK, true},
		{"delete of a labelled object", "POST", review("DELETE", `{"deny":"true"}`), http.StatusOK, false},
		{"no request", "POST", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest, false},
		{"not JSON", "POST", `{`, http.StatusBadRequest, false},
		{"GET", "GET", "", http.StatusMethodNotAllowed, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(c.method, "/validate", strings.NewReader(c.body)))
			if rec.Code != c.code {
				t.Fatalf("code %d, want %d: %s", rec.Code, c.code, rec.Body)
			}
			if c.code != http.StatusOK {
				return
			}
			var out struct {
				Kind     string `json:"kind"`
				Response struct {
					UID     string `json:"uid"`
					Allowed bool   `json:"allowed"`
					Status  struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"status"`
				} `json:"response"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			if out.Kind != "AdmissionReview" || out.Response.UID != "u-1" || out.Response.Allowed != c.allowed {
				t.Fatalf("answer %s", rec.Body)
			}
			if !c.allowed && (out.Response.Status.Code != http.StatusForbidden ||
				out.Response.Status.Message != `ConfigMap "cm" is labelled deny=true, which this webhook refuses`) {
				t.Errorf("refusal %s", rec.Body)
			}
		})
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/healthz: %d", rec.Code)
	}
}

// FuzzWebhookReview: whatever the body, the webhook answers a review or
// a 400, and never panics.
func FuzzWebhookReview(f *testing.F) {
	f.Add([]byte(review("CREATE", `{"deny":"true"}`)))
	f.Add([]byte(review("DELETE", `null`)))
	f.Add([]byte(`{"request":{"object":[1]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := reviewAnswer(body, "deny", "true")
		if err == nil && (out.Response == nil || out.Response.Allowed == (out.Response.Result != nil)) {
			t.Fatalf("no response for %q", body)
		}
	})
}
