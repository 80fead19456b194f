package main

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxReviewBytes bounds an AdmissionReview the webhook reads: the API
// server's objects are at most a few megabytes.
const maxReviewBytes = 8 << 20

func newWebhookCommand(g *globalOptions) *cobra.Command {
	var listen, certFile, keyFile, deny string
	cmd := &cobra.Command{
		Use:   "webhook --listen ADDR --cert FILE --key FILE --deny-label KEY=VALUE",
		Short: "Serve a validating admission webhook over HTTPS",
		Long: `webhook answers admission.k8s.io/v1 AdmissionReviews on every path: it
refuses an object (or, for a delete, the old object) that carries the
label KEY=VALUE, and allows everything else. /healthz answers 200 "ok"
for probes. It stops gracefully on SIGTERM.`,
		Example: `  berth toolbox webhook --listen 127.0.0.1:8443 --cert tls.crt --key tls.key \
      --deny-label policy.example.com/deny=true`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, value, ok := strings.Cut(deny, "=")
			if !ok || key == "" {
				return usageErrorf("--deny-label must be KEY=VALUE, not %q", deny)
			}
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return failed(fmt.Errorf("webhook: %w", err))
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return failed(fmt.Errorf("webhook: %w", err))
			}
			ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
			if err := serveEcho(cmd.Context(), g.logger, "webhook", ln, webhookHandler(g.logger, key, value)); err != nil {
				return failed(fmt.Errorf("webhook: %w", err))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ":8443", "address to listen on, host:port")
	cmd.Flags().StringVar(&certFile, "cert", "", "serving certificate (PEM)")
	cmd.Flags().StringVar(&keyFile, "key", "", "its private key (PEM)")
	cmd.Flags().StringVar(&deny, "deny-label", "", "refuse objects with this label, KEY=VALUE")
	_ = cmd.MarkFlagRequired("cert")
	_ = cmd.MarkFlagRequired("key")
	_ = cmd.MarkFlagRequired("deny-label")
	return cmd
}

// webhookHandler answers AdmissionReviews, refusing the objects labelled
// key=value.
func webhookHandler(log *slog.Logger, key, value string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
		if err == nil && len(body) > maxReviewBytes {
			err = errors.New("the review is too large")
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		review, err := reviewAnswer(body, key, value)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		log.Debug("admission review", "uid", review.Response.UID, "allowed", review.Response.Allowed)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	})
	return mux
}

// reviewAnswer reads an AdmissionReview and returns it with its answer:
// refused when the object under review is labelled key=value.
func reviewAnswer(body []byte, key, value string) (*admissionv1.AdmissionReview, error) {
	var in admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("not an AdmissionReview: %w", err)
	}
	if in.Request == nil {
		return nil, errors.New("the AdmissionReview has no request")
	}
	raw := in.Request.Object.Raw
	if len(raw) == 0 {
		raw = in.Request.OldObject.Raw
	}
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("the object under review: %w", err)
		}
	}
	resp := &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}
	if v, ok := obj.Metadata.Labels[key]; ok && v == value {
		resp.Allowed = false
		resp.Result = &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusForbidden,
			Reason:  metav1.StatusReasonForbidden,
			Message: fmt.Sprintf("%s %q is labelled %s=%s, which this webhook refuses", in.Request.Kind.Kind, in.Request.Name, key, value),
		}
	}
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Response: resp,
	}, nil
}
