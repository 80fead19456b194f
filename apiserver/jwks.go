package apiserver

import (
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/apiserver/auth"
)

// JWKSHandler serves the signer's JWKS document (GET JWKSPath).
func JWKSHandler(s *auth.Signer) http.Handler {
	return discoveryDocHandler("application/jwk-set+json", func() any { return s.JWKS() })
}

// OIDCDiscoveryHandler serves the OpenID provider configuration (GET
// OIDCDiscoveryPath).
func OIDCDiscoveryHandler(s *auth.Signer) http.Handler {
	return discoveryDocHandler("application/json", func() any { return s.Discovery() })
}

func discoveryDocHandler(contentType string, doc func() any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeAuthStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "only GET is allowed")
			return
		}
		body, err := json.Marshal(doc())
		if err != nil {
			writeAuthStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
			return
		}
		w.Header().Set("Content-Type", contentType)
		// The key changes only when the data dir does; let verifiers cache.
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}
