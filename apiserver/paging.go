package apiserver

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/store"
)

// A list with limit=N answers at most N objects and, when more match, a
// metadata.continue token and remainingItemCount, as Kubernetes does;
// the token asks for the next page. Every page of a list is read from
// the snapshot its first page was: the token carries that snapshot's
// revision and the key the next page starts at, and the server keeps the
// snapshot for pagingSnapshotTTL after its last page was read. Past
// that (or beyond pagingSnapshots snapshots kept) the token is too old:
// 410 Gone with a token that goes on from the newest revision instead,
// as Kubernetes answers a token whose revision etcd has compacted.

// continueAPIVersion is the version of Kubernetes' continue token, which
// berth's has the shape of.
const continueAPIVersion = "meta.k8s.io/v1"

// continueToken is the JSON inside a continue token (base64url, no
// padding): the revision the list is read at (-1: the newest, after a
// 410) and the key its next page starts at.
type continueToken struct {
	APIVersion string `json:"v"`
	RV         int64  `json:"rv"`
	Start      string `json:"start"`
}

// maxContinueBytes bounds a token: a key is a namespace and a name, a
// few hundred bytes at most.
const maxContinueBytes = 4096

// encodeContinue is the token of the page of a list read at rev that
// starts at key start.
func encodeContinue(rev int64, start string) string {
	data, _ := json.Marshal(continueToken{APIVersion: continueAPIVersion, RV: rev, Start: start})
	return base64.RawURLEncoding.EncodeToString(data)
}

// errInvalidContinue is what every token the server did not make, or
// made for another list, is refused with.
var errInvalidContinue = errors.New("continue key is not valid")

// decodeContinue reads a token of a list whose keys all start with
// prefix ("namespace/" for a namespace's objects, "" otherwise).
func decodeContinue(token, prefix string) (rev int64, start string, err error) {
	if len(token) > maxContinueBytes {
		return 0, "", fmt.Errorf("%w: longer than %d bytes", errInvalidContinue, maxContinueBytes)
	}
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, "", fmt.Errorf("%w: %v", errInvalidContinue, err)
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return 0, "", fmt.Errorf("%w: %v", errInvalidContinue, err)
	}
	switch {
	case c.APIVersion != continueAPIVersion:
		return 0, "", fmt.Errorf("%w: unrecognized encoded version %q", errInvalidContinue, c.APIVersion)
	case c.RV == 0 || c.RV < -1:
		return 0, "", fmt.Errorf("%w: incorrect encoded start resourceVersion %d", errInvalidContinue, c.RV)
	case c.Start == "":
		return 0, "", fmt.Errorf("%w: encoded start key is empty", errInvalidContinue)
	case !strings.HasPrefix(c.Start, prefix):
		return 0, "", fmt.Errorf("%w: the start key %q is not in this list", errInvalidContinue, c.Start)
	}
	return c.RV, c.Start, nil
}

// listOptions are a list's paging parameters.
type listOptions struct {
	limit int
	// cont is the decoded continue token: its revision and start key.
	contRev   int64
	contStart string
}

// parsePaging reads limit and continue, and refuses what Kubernetes
// refuses alongside a continue token.
func parsePaging(get func(string) string, prefix string) (listOptions, error) {
	var o listOptions
	if v := get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return o, badRequest("invalid limit %q: it is a whole number", v)
		}
		// limit <= 0 is no limit, as in Kubernetes; past maxInt the list
		// is whole anyway.
		o.limit = int(max(0, min(n, int64(^uint(0)>>1))))
	}
	cont := get("continue")
	if cont == "" {
		return o, nil
	}
	if rv := get("resourceVersion"); rv != "" && rv != "0" {
		return o, badRequest("specifying resource version is not allowed when using continue")
	}
	if get("resourceVersionMatch") != "" {
		return o, badRequest("resourceVersionMatch is forbidden when continue is provided")
	}
	rev, start, err := decodeContinue(cont, prefix)
	if err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	o.contRev, o.contStart = rev, start
	return o, nil
}

// tooOldContinue is Kubernetes' 410 for a token whose snapshot is gone,
// carrying a token that lists the rest from the newest revision.
func tooOldContinue(start string) error {
	err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. " +
		"Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
	err.ErrStatus.ListMeta.Continue = encodeContinue(-1, start)
	return err
}

// Bounds of the snapshots kept for paging.
const (
	// pagingSnapshotTTL is how long a snapshot is kept after its last
	// page was read: Kubernetes' default etcd compaction interval.
	pagingSnapshotTTL = 5 * time.Minute
	// maxPagingSnapshots is how many revisions' snapshots are kept at
	// once. Each keeps alive the versions of objects written since, so
	// the bound is memory; the least recently read goes first.
	maxPagingSnapshots = 64
)

// pagingSnapshots keeps the snapshots that paged lists are read from,
// by revision. A snapshot is read-only, so one serves every page of
// every list at its revision at once.
type pagingSnapshots struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	snaps map[uint64]*pagingSnapshot
}

type pagingSnapshot struct {
	snap *store.Snapshot
	used time.Time
}

func newPagingSnapshots(c clock.PassiveClock) *pagingSnapshots {
	return &pagingSnapshots{clock: c, snaps: map[uint64]*pagingSnapshot{}}
}

// keep holds snap for later pages.
func (p *pagingSnapshots) keep(snap *store.Snapshot) {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expire(now)
	if e := p.snaps[snap.Revision()]; e != nil {
		e.used = now
		return
	}
	if len(p.snaps) >= maxPagingSnapshots {
		var oldest uint64
		for rev, e := range p.snaps {
			if oldest == 0 || e.used.Before(p.snaps[oldest].used) {
				oldest = rev
			}
		}
		delete(p.snaps, oldest)
	}
	p.snaps[snap.Revision()] = &pagingSnapshot{snap: snap, used: now}
}

// at is the snapshot kept at rev, or nil.
func (p *pagingSnapshots) at(rev uint64) *store.Snapshot {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expire(now)
	e := p.snaps[rev]
	if e == nil {
		return nil
	}
	e.used = now
	return e.snap
}

// expire drops the snapshots unread for pagingSnapshotTTL; p.mu is held.
func (p *pagingSnapshots) expire(now time.Time) {
	for rev, e := range p.snaps {
		if now.Sub(e.used) >= pagingSnapshotTTL {
			delete(p.snaps, rev)
		}
	}
}
