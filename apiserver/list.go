package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// futureRevisionWait is how long a list or watch waits for the store to
// reach a resourceVersion ahead of it (one written but not yet visible,
// or one from another control plane) before answering 504, as
// Kubernetes' watch cache does.
const futureRevisionWait = 3 * time.Second

// serveGet answers one object, or its status subresource (the same
// object, as in Kubernetes).
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	format, err := negotiateFormat(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	obj, err := s.store.Get(req.kind, req.namespace, req.name)
	if err != nil {
		// Whoever may not read the object learns nothing of whether it
		// exists.
		if authErr := s.authorize(r, req, nil, nil); authErr != nil {
			err = authErr
		}
		WriteError(w, err)
		return
	}
	if err := s.authorize(r, req, nil, obj); err != nil {
		WriteError(w, err)
		return
	}
	if format == formatTable {
		t, err := s.newTabler(r, req.kind)
		if err != nil {
			WriteError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, t.single(obj, true))
		return
	}
	writeJSON(w, http.StatusOK, obj)
}

// serveList streams the objects a selection matches from one snapshot,
// with the snapshot's revision as the list's resourceVersion: a watch from
// it misses nothing and repeats nothing. limit and continue are ignored,
// which Kubernetes allows: every list is one page.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	format, err := negotiateFormat(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	q := r.URL.Query()
	sel, err := parseSelection(req.kind, req.namespace, q)
	if err != nil {
		WriteError(w, err)
		return
	}
	if err := s.authorizeSelection(r.Context(), req, sel); err != nil {
		WriteError(w, err)
		return
	}
	var t *tabler
	if format == formatTable {
		if t, err = s.newTabler(r, req.kind); err != nil {
			WriteError(w, err)
			return
		}
	}
	rv, err := parseResourceVersion(q.Get("resourceVersion"))
	if err != nil {
		WriteError(w, err)
		return
	}
	exact, err := exactResourceVersion(q)
	if err != nil {
		WriteError(w, err)
		return
	}
	if err := s.waitForRevision(r.Context(), rv); err != nil {
		WriteError(w, err)
		return
	}
	snap := s.store.Snapshot()
	if exact && snap.Revision() != rv {
		// The store lists its newest revision only; an older one is gone.
		WriteError(w, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, snap.Revision())))
		return
	}
	lw := newListWriter(w, req.kind, snap.Revision(), t)
	if err := snap.Each(req.kind, sel.filter, lw.add); err != nil {
		s.log.Error("list failed mid-stream", "resource", req.kind.Resource, "err", err)
		return
	}
	if err := lw.close(); err != nil {
		s.log.Debug("list stream cut short", "resource", req.kind.Resource, "err", err)
	}
}

// parseResourceVersion reads a resourceVersion parameter: a decimal store
// revision, 0 when absent.
func parseResourceVersion(v string) (uint64, error) {
	if v == "" {
		return 0, nil
	}
	rv, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, badRequest("invalid resourceVersion %q: it is a decimal revision", v)
	}
	return rv, nil
}

// exactResourceVersion reads a list's resourceVersionMatch: Exact asks for
// the objects as they were at resourceVersion, NotOlderThan (and none) for
// them as they are, at that revision or later.
func exactResourceVersion(q url.Values) (bool, error) {
	match := metav1.ResourceVersionMatch(q.Get("resourceVersionMatch"))
	rv := q.Get("resourceVersion")
	switch {
	case match == "":
		return false, nil
	case rv == "":
		return false, badRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
	case match == metav1.ResourceVersionMatchNotOlderThan:
		return false, nil
	case match != metav1.ResourceVersionMatchExact:
		return false, badRequest("resourceVersionMatch: Unsupported value: %q: supported values: %q, %q", match, metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan)
	case rv == "0":
		return false, badRequest(`resourceVersionMatch "Exact" is forbidden for resourceVersion "0"`)
	}
	return true, nil
}

// waitForRevision waits, a short while, for the store to reach rev.
func (s *Server) waitForRevision(ctx context.Context, rev uint64) error {
	if rev == 0 || s.store.Revision() >= rev {
		return nil
	}
	deadline := s.clock.Now().Add(futureRevisionWait)
	t := s.clock.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for s.store.Revision() < rev {
		if !s.clock.Now().Before(deadline) {
			return tooLargeResourceVersion(rev, s.store.Revision())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
		}
	}
	return nil
}

// tooLargeResourceVersion is Kubernetes' answer to a resourceVersion the
// server has not reached: 504 with a ResourceVersionTooLarge cause, which
// client-go's reflector recognises and answers by listing again.
func tooLargeResourceVersion(want, have uint64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", want, have), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}
