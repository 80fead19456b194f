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

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// futureRevisionWait is how long a list or watch waits for the store to
// reach a resourceVersion ahead of it (one written but not yet visible,
// or one from another control plane) before answering 504, as
// Kubernetes' watch cache does.
const futureRevisionWait = 3 * time.Second

// readLatest makes a read without a resourceVersion see the most recent
// objects, as Kubernetes' quorum read: through any control plane, what
// every write acknowledged before it made (store.Sync). A read at a
// resourceVersion (0 too) is served from the store's copy, as from
// Kubernetes' watch cache.
func (s *Server) readLatest(ctx context.Context, q url.Values) error {
	if q.Get("resourceVersion") != "" {
		return nil
	}
	return s.store.Sync(ctx)
}

// serveGet answers one object, or its status subresource (the same
// object, as in Kubernetes).
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	format, err := negotiateFormat(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	if err := s.readLatest(r.Context(), r.URL.Query()); err != nil {
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
	writeStored(w, http.StatusOK, req.served(obj))
}

// serveList answers the objects a selection matches from one snapshot,
// with the snapshot's revision as the list's resourceVersion: a watch from
// it misses nothing and repeats nothing. A whole list streams; a page
// (limit, continue: see paging.go) is read first, so that its metadata can
// say whether more follow.
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
	prefix := ""
	if req.namespace != "" {
		prefix = req.namespace + "/"
	}
	paging, err := parsePaging(q.Get, prefix)
	if err != nil {
		WriteError(w, err)
		return
	}
	var snap *store.Snapshot
	if paging.contStart != "" {
		if snap, err = s.continuedSnapshot(paging); err != nil {
			WriteError(w, err)
			return
		}
	} else if snap, err = s.listSnapshot(r.Context(), q); err != nil {
		WriteError(w, err)
		return
	}
	if paging.limit == 0 {
		lw := newListWriter(w, req.pathKind(), listMeta{rev: snap.Revision()}, t)
		lw.serve = req.served
		if err := snap.EachFrom(req.kind, sel.filter, paging.contStart, lw.add); err != nil {
			s.log.Error("list failed mid-stream", "resource", req.kind.Resource, "err", err)
			return
		}
		if err := lw.close(); err != nil {
			s.log.Debug("list stream cut short", "resource", req.kind.Resource, "err", err)
		}
		return
	}
	var (
		page []api.Object
		more int64
	)
	err = snap.EachFrom(req.kind, sel.filter, paging.contStart, func(o api.Object) bool {
		if len(page) < paging.limit {
			page = append(page, o)
		} else {
			more++
		}
		return true
	})
	if err != nil {
		WriteError(w, err)
		return
	}
	meta := listMeta{rev: snap.Revision()}
	if more > 0 {
		meta.cont = encodeContinue(int64(snap.Revision()), store.Key(page[len(page)-1])+"\x00")
		meta.remaining = &more
		s.pages.keep(snap)
	}
	lw := newListWriter(w, req.pathKind(), meta, t)
	lw.serve = req.served
	for _, o := range page {
		if !lw.add(o) {
			break
		}
	}
	if err := lw.close(); err != nil {
		s.log.Debug("list stream cut short", "resource", req.kind.Resource, "err", err)
	}
}

// listSnapshot is the snapshot a list's first page is read from: the
// newest, once the store has reached the resourceVersion asked for, or
// exactly that revision's with resourceVersionMatch=Exact while the
// store still has it (410 once it has not).
func (s *Server) listSnapshot(ctx context.Context, q url.Values) (*store.Snapshot, error) {
	rv, err := parseResourceVersion(q.Get("resourceVersion"))
	if err != nil {
		return nil, err
	}
	exact, err := exactResourceVersion(q)
	if err != nil {
		return nil, err
	}
	if err := s.waitForRevision(ctx, rv); err != nil {
		return nil, err
	}
	if err := s.readLatest(ctx, q); err != nil {
		return nil, err
	}
	snap := s.store.Snapshot()
	if exact && snap.Revision() != rv {
		// An older revision is there only while a paged list reads it.
		if kept := s.pages.at(rv); kept != nil {
			return kept, nil
		}
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, snap.Revision()))
	}
	return snap, nil
}

// continuedSnapshot is the snapshot a continue token's page is read
// from: the one its first page was, or the newest for a token that says
// so; 410 once it is gone.
func (s *Server) continuedSnapshot(o listOptions) (*store.Snapshot, error) {
	snap := s.store.Snapshot()
	if o.contRev == -1 || snap.Revision() == uint64(o.contRev) {
		return snap, nil
	}
	if kept := s.pages.at(uint64(o.contRev)); kept != nil {
		return kept, nil
	}
	if uint64(o.contRev) > snap.Revision() {
		// A token from another control plane ahead of this one.
		return nil, tooLargeResourceVersion(uint64(o.contRev), snap.Revision())
	}
	return nil, tooOldContinue(o.contStart)
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
