package apiserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"github.com/berth-dev/berth/api"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// JoinPath is where agents join; see api.JoinPath.
const JoinPath = api.JoinPath

// maxJoinBody caps a join request body: a node name is at most 253 bytes
// and its addresses a few more.
const maxJoinBody = 16 << 10

// ServingCertIssuer signs an agent's serving certificate for the addresses
// of a join, returning the certificate and key in PEM.
type ServingCertIssuer func(node string, addresses []string) (certPEM, keyPEM []byte, err error)

// JoinHandler serves JoinPath. The join token is the cluster-wide secret in
// the data dir's node-token; it is accepted here and nowhere else, so a
// leaked node credential exposes one node, not the power to become any.
//
// issue, when not nil, signs a serving certificate for the addresses a
// join names.
func JoinHandler(joinToken string, s *Signer, issue ServingCertIssuer) http.Handler {
	want := sha256.Sum256([]byte(joinToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeAuthStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "join takes POST")
			return
		}
		tok, ok := BearerToken(r)
		got := sha256.Sum256([]byte(tok))
		// Comparing digests keeps the comparison constant-time even in the
		// token's length; an empty join token is never accepted.
		if !ok || joinToken == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			writeAuthStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "join: invalid or missing node join token")
			return
		}
		var req api.JoinRequest
		dec := json.NewDecoder(io.LimitReader(r.Body, maxJoinBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeAuthStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "join: decode body: "+err.Error())
			return
		}
		if errs := validation.IsDNS1123Subdomain(req.NodeName); len(errs) > 0 {
			writeAuthStatus(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
				fmt.Sprintf("join: nodeName %q: %s", req.NodeName, strings.Join(errs, "; ")))
			return
		}
		cred, err := s.IssueNodeCredential(req.NodeName)
		if err != nil {
			writeAuthStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "join: "+err.Error())
			return
		}
		resp := api.JoinResponse{Token: cred}
		if issue != nil && len(req.Addresses) > 0 {
			cert, key, err := issue(req.NodeName, req.Addresses)
			if err != nil {
				writeAuthStatus(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "join: serving certificate: "+err.Error())
				return
			}
			resp.ServingCertificate, resp.ServingKey = string(cert), string(key)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(resp)
	})
}

// writeAuthStatus answers with a Kubernetes Status through WriteError, as
// every other error of the API.
func writeAuthStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	WriteError(w, &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    int32(code),
		Reason:  reason,
		Message: msg,
	}})
}
