package apiserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// JoinPath is where an agent trades the node join token for its own node
// credential: POST JoinPath with "Authorization: Bearer <join token>" and
// the body JoinRequest; the answer is a JoinResponse. It sits outside the
// resource paths because it is not a resource and needs no credential
// beyond the join token.
const JoinPath = "/berth/v1/join"

// maxJoinBody caps a join request body; a node name is at most 253 bytes.
const maxJoinBody = 4 << 10

// JoinRequest is the body of a join: the node that asks for a credential.
type JoinRequest struct {
	NodeName string `json:"nodeName"`
}

// JoinResponse carries the node credential: a bearer token for every later
// request of the node, which authenticates as system:node:<nodeName>.
type JoinResponse struct {
	Token string `json:"token"`
}

// JoinHandler serves JoinPath. The join token is the cluster-wide secret in
// the data dir's node-token; it is accepted here and nowhere else, so a
// leaked node credential exposes one node, not the power to become any.
func JoinHandler(joinToken string, s *Signer) http.Handler {
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
		var req JoinRequest
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
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(JoinResponse{Token: cred})
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
