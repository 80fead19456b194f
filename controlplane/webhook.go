package controlplane

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/apiserver"
)

// HooksPath is where webhooks are posted: HooksPath + "<source>".
const HooksPath = "/hooks/"

// Webhook headers: GitHub's (and Gitea's, Bitbucket's) HMAC signature, and
// GitLab's shared token.
const (
	HeaderHubSignature256 = "X-Hub-Signature-256"
	HeaderGitlabToken     = "X-Gitlab-Token"
)

// MaxWebhookBody caps a webhook's body at GitHub's own cap of a push
// payload (25 MB). The body is read before it is authenticated, but only
// into the HMAC: it is never held.
const MaxWebhookBody = 25 << 20

// ReadWebhookSecret reads the shared secret of webhooks from a file,
// without the trailing newline an editor or `echo` leaves.
func ReadWebhookSecret(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	secret := bytes.TrimRight(data, "\r\n")
	if len(secret) == 0 {
		return nil, fmt.Errorf("webhook secret %s is empty", path)
	}
	return secret, nil
}

// webhook answers POST /hooks/<source> (SPEC §3), which needs no bearer
// token: the caller proves it knows the secret with an HMAC-SHA256 of the
// body (X-Hub-Signature-256: sha256=<hex>) or, as GitLab does, by sending
// it (X-Gitlab-Token). Both are compared in constant time. The signature
// is checked before the source is looked up, so that nobody without the
// secret can learn which sources exist, and a request that brings no
// credential is refused before its body is read. Answers: 202 and a sync of the
// source; 401 for a bad or missing signature (nothing is synced); 404 for
// a source that is not configured; 403 for every request when the server
// has no secret (webhooks are off); 405 for another method; 413 for a body
// over MaxWebhookBody; 429 with Retry-After, before anything is read, for
// a source address that sent more bad signatures than peerLimiter forgives,
// whose refusals are logged once, not once a request.
type webhook struct {
	secret  []byte
	trigger func(name string) bool
	log     *slog.Logger
	limit   *peerLimiter
	// plans plans a pushed branch that is not the Source's; nil: every
	// webhook is a trigger.
	plans *branchPlans
}

func newWebhook(secret []byte, trigger func(string) bool, log *slog.Logger, clk clock.PassiveClock) *webhook {
	return &webhook{secret: secret, trigger: trigger, log: log, limit: newPeerLimiter(clk)}
}

var hooksResource = schema.GroupResource{Group: "berth.dev", Resource: "hooks"}

func (h *webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, HooksPath)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		apiserver.WriteError(w, apierrors.NewMethodNotSupported(hooksResource, r.Method))
		return
	}
	if h.secret == nil {
		apiserver.WriteError(w, apierrors.NewForbidden(hooksResource, name,
			errors.New("webhooks are disabled: the server has no --webhook-secret-file")))
		return
	}
	peer := peerKey(r.RemoteAddr)
	if wait := h.limit.wait(peer); wait > 0 {
		if ok, suppressed := h.limit.logRefusal(peer, true); ok {
			h.log.Warn("webhook: too many bad signatures; refusing the sender until it may try again",
				"remote", r.RemoteAddr, "retry_after", wait, "suppressed", suppressed)
		}
		apiserver.WriteError(w, apierrors.NewTooManyRequests(
			"too many bad webhook signatures from this address: retry later", retryAfter(wait)))
		return
	}
	peek := &peekBuffer{max: maxPushPeek}
	ok, err := h.authentic(w, r, peek)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	if !ok {
		h.limit.fail(peer)
		if ok, suppressed := h.limit.logRefusal(peer, false); ok {
			h.log.Warn("webhook refused: bad or missing signature", "source", name, "remote", r.RemoteAddr, "suppressed", suppressed)
		}
		apiserver.WriteError(w, apierrors.NewUnauthorized(
			"bad or missing webhook signature: send "+HeaderHubSignature256+": sha256=<hex HMAC-SHA256 of the body> or "+HeaderGitlabToken))
		return
	}
	if name == "" || strings.Contains(name, "/") {
		apiserver.WriteError(w, apierrors.NewNotFound(schema.GroupResource{Group: "berth.dev", Resource: "sources"}, name))
		return
	}
	if msg, ok := h.plans.request(name, peek.Bytes()); ok {
		h.log.Info("webhook: "+msg, "source", name)
		accepted(w, msg)
		return
	}
	if !h.trigger(name) {
		apiserver.WriteError(w, apierrors.NewNotFound(schema.GroupResource{Group: "berth.dev", Resource: "sources"}, name))
		return
	}
	h.log.Info("webhook: sync triggered", "source", name)
	accepted(w, fmt.Sprintf("sync of source %s triggered", name))
}

// accepted answers 202 with a Status saying what was done.
func accepted(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Code:     http.StatusAccepted,
		Message:  msg,
	})
}

// peekBuffer keeps the first max bytes written to it and counts the
// rest, so that a body streamed through the HMAC can be read for its
// branch without being held whole.
type peekBuffer struct {
	buf []byte
	max int
	cut bool
}

func (p *peekBuffer) Write(b []byte) (int, error) {
	room := p.max - len(p.buf)
	if len(b) > room {
		p.cut = true
	}
	p.buf = append(p.buf, b[:min(max(room, 0), len(b))]...)
	return len(b), nil
}

// Bytes is what was kept; nil when the body was cut short.
func (p *peekBuffer) Bytes() []byte {
	if p.cut {
		return nil
	}
	return p.buf
}

// authentic checks the request's credentials against the secret. What
// needs no body is checked before any of it is read, so that a request
// without credentials, or with a malformed signature or a wrong GitLab
// token, costs no reading: only a well-formed signature has the body
// (up to MaxWebhookBody) streamed through the HMAC. The error is the
// body's (too large, cut short).
func (h *webhook) authentic(w http.ResponseWriter, r *http.Request, peek *peekBuffer) (bool, error) {
	if sig := r.Header.Get(HeaderHubSignature256); sig != "" {
		hexSum, ok := strings.CutPrefix(sig, "sha256=")
		if !ok {
			return false, nil
		}
		want, err := hex.DecodeString(hexSum)
		if err != nil || len(want) != sha256.Size {
			return false, nil
		}
		mac := hmac.New(sha256.New, h.secret)
		if err := apiserver.CopyBody(w, r, io.MultiWriter(mac, peek), MaxWebhookBody); err != nil {
			return false, err
		}
		return hmac.Equal(want, mac.Sum(nil)), nil
	}
	if token := r.Header.Get(HeaderGitlabToken); token != "" {
		if !hmac.Equal([]byte(token), h.secret) {
			return false, nil
		}
		return true, apiserver.CopyBody(w, r, peek, MaxWebhookBody)
	}
	return false, nil
}
