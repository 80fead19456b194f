package apiserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/store"
)

// JoinPath is where agents join; see api.JoinPath.
const JoinPath = api.JoinPath

// maxJoinBody caps a join request body: a node name is at most 253 bytes
// and its addresses a few more.
const maxJoinBody = 16 << 10

// ServingCertIssuer signs an agent's serving certificate for the addresses
// of a join, returning the certificate and key in PEM.
type ServingCertIssuer func(node string, addresses []string) (certPEM, keyPEM []byte, err error)

// JoinConfig is what JoinHandler needs.
type JoinConfig struct {
	// JoinToken is the cluster-wide secret in the data dir's node-token;
	// empty, no join is accepted.
	JoinToken string
	// Signer issues node credentials.
	Signer *auth.Signer
	// Issue, when not nil, signs a serving certificate for the addresses
	// a join names.
	Issue ServingCertIssuer
	// Store is where the Node and its Lease are read: a credential is
	// bound to the Node there is, and a live node is not joined again
	// with the join token.
	Store *store.Store
	// Authenticator checks a node's own credential, which renews it.
	Authenticator auth.Authenticator
}

// JoinHandler serves JoinPath. It takes two credentials: the join token,
// the cluster-wide secret in the data dir's node-token, which is accepted
// here and nowhere else, so a leaked node credential exposes one node, not
// the power to become any; and a node's own credential, which renews
// itself (as a kubelet rotates its client certificate with the one it
// has). The join token joins a node whose Node does not exist or is no
// longer live (its Lease has run out: a machine replaced), never one that
// is: that would hand a second agent the first one's Node. The credential
// issued is bound to the Node there is (IssueBoundNodeCredential).
func JoinHandler(cfg JoinConfig) http.Handler {
	want := sha256.Sum256([]byte(cfg.JoinToken))
	s := cfg.Signer
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeAuthStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "join takes POST")
			return
		}
		tok, ok := auth.BearerToken(r)
		got := sha256.Sum256([]byte(tok))
		// Comparing digests keeps the comparison constant-time even in the
		// token's length; an empty join token is never accepted.
		byJoinToken := ok && cfg.JoinToken != "" && subtle.ConstantTimeCompare(got[:], want[:]) == 1
		var renewer *auth.Identity
		if ok && !byJoinToken && cfg.Authenticator != nil {
			if id, err := cfg.Authenticator.Authenticate(r.Context(), tok); err == nil && id.Kind == auth.IdentityNode {
				renewer = id
			}
		}
		if !byJoinToken && renewer == nil {
			writeAuthStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "join: invalid or missing node join token or node credential")
			return
		}
		req, err := DecodeJoinRequest(io.LimitReader(r.Body, maxJoinBody))
		if err != nil {
			code, reason := http.StatusBadRequest, metav1.StatusReasonBadRequest
			if errors.Is(err, errJoinInvalid) {
				code, reason = http.StatusUnprocessableEntity, metav1.StatusReasonInvalid
			}
			writeAuthStatus(w, code, reason, err.Error())
			return
		}
		if renewer != nil && renewer.Node != req.NodeName {
			writeAuthStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
				fmt.Sprintf("join: the credential of node %q renews only itself, not node %q", renewer.Node, req.NodeName))
			return
		}
		var uid types.UID
		if cfg.Store != nil {
			snap := cfg.Store.Snapshot()
			node, err := snap.Get(authNodeKind, "", req.NodeName)
			switch {
			case store.IsNotFound(err):
			case err != nil:
				writeAuthStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "join: "+err.Error())
				return
			default:
				uid = node.GetUID()
				if renewer == nil {
					if until, live := nodeLive(snap, req.NodeName, s.Now()); live {
						writeAuthStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf(
							"join: node %q is live (its Lease runs until %s): the join token does not join it again; "+
								"its agent renews its credential with that credential; if the machine is gone, "+
								"stop its agent, or delete the Node (berth delete node %s)",
							req.NodeName, until.UTC().Format(time.RFC3339), req.NodeName))
						return
					}
				}
			}
		}
		cred, err := s.IssueBoundNodeCredential(req.NodeName, uid)
		if err != nil {
			writeAuthStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "join: "+err.Error())
			return
		}
		resp := api.JoinResponse{Token: cred}
		if cfg.Issue != nil && len(req.Addresses) > 0 {
			cert, key, err := cfg.Issue(req.NodeName, req.Addresses)
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

// errJoinInvalid marks a join request that decodes but names no valid node.
var errJoinInvalid = errors.New("invalid join request")

// DecodeJoinRequest reads a join request: one JSON object of known fields
// and a node name that is a DNS subdomain. Every error names the field.
func DecodeJoinRequest(r io.Reader) (api.JoinRequest, error) {
	var req api.JoinRequest
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("join: decode body: %w", err)
	}
	if dec.More() {
		return req, errors.New("join: decode body: more than one JSON value")
	}
	if errs := validation.IsDNS1123Subdomain(req.NodeName); len(errs) > 0 {
		return req, fmt.Errorf("%w: join: nodeName %q: %s", errJoinInvalid, req.NodeName, strings.Join(errs, "; "))
	}
	return req, nil
}

// nodeLive reports whether node's Lease in kube-node-lease has not run out
// at now, and until when it runs.
func nodeLive(snap *store.Snapshot, node string, now time.Time) (time.Time, bool) {
	obj, err := snap.Get(authLeaseKind, api.NamespaceNodeLease, node)
	if err != nil {
		return time.Time{}, false
	}
	l, ok := obj.(*api.Lease)
	if !ok || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return time.Time{}, false
	}
	until := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	return until, now.Before(until)
}

var (
	authLeaseKind = api.KindOf(&api.Lease{})
	authNodeKind  = api.KindOf(&api.Node{})
)

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
