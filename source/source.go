package source

import (
	"context"
	"time"

	"github.com/berth-dev/berth/api"
)

// Revision is one state of a source. The applier treats it as a
// transaction: it applies Objects only when Errors and Err are both empty.
type Revision struct {
	// ID names the state: the commit SHA for git, "sha256:<hex>" of the
	// files' paths and contents for dir and http.
	ID string
	// Objects is every object decoded from the revision (status dropped),
	// each with its file, document and line. They are read-only: a source
	// shares them with its decode cache and hands an unchanged file's
	// objects out again, the very same pointers, in its next revisions; a
	// receiver copies an object before changing it (defaulting included).
	Objects []*api.Decoded
	// Errors is every decode error: bad YAML, unknown kind or field, a
	// value of the wrong type, the same object in two places, a file too
	// big or unreadable. A non-empty list rejects the revision.
	Errors api.ErrorList
	// Err says the source could not be read at all (an unreachable remote,
	// a deleted ref, a server error). ID is then the last one read, or "",
	// and Objects is nil.
	Err error
	// Time is when the revision was read, on the source's clock.
	Time time.Time
	// Commit describes a git revision's commit; nil for other sources,
	// and when the revision is one the receiver already has.
	Commit *api.SourceCommit
	// Chart describes the Helm chart the revision rendered; nil when it
	// rendered none.
	Chart *Chart
}

// OK reports whether the revision can be applied: it was read and every
// file decoded.
func (r Revision) OK() bool { return r.Err == nil && len(r.Errors) == 0 }

// Source watches one place and sends a Revision when what it holds
// changes, when reading it fails, or when Trigger asks.
type Source interface {
	// Run sends revisions on out until ctx is done: one at start, then one
	// whenever the content changes, a check fails, or Trigger is called
	// (even if nothing changed, so the caller learns the check is done).
	// It never sends two identical successful revisions in a row except
	// after Trigger. It returns nil when ctx is done, and an error only
	// when the source cannot run at all. Run is called once.
	Run(ctx context.Context, out chan<- Revision) error
	// Trigger asks for a check now (a webhook, `berth reconcile source`).
	// It never blocks; triggers that arrive while a check is pending are
	// folded into it.
	Trigger()
}

// MaxFileSize is the largest manifest file (or HTTP body) a source reads:
// anything bigger is refused with an error naming it, so that a stray
// binary or log file cannot exhaust memory.
const MaxFileSize = 10 << 20

// Fetcher reads a source when asked, for a controller that decides when
// (the Source controller): the same reads as Run's checks, without the
// loop around them. Its methods are called from one goroutine at a time.
type Fetcher interface {
	// Fetch reads the source once. have is the ID of the revision the
	// caller holds, "" when it needs the whole revision whatever it is:
	// when the read finds have again, Fetch may return the ID alone.
	Fetch(ctx context.Context, have string) Revision
	// Close lets go of what the fetcher keeps open between reads.
	Close()
}

// RevisionFetcher is a Fetcher that can read a past revision again by its
// ID, as a git source reads a commit: what lets spec.rollbackOnFailure
// roll back to status.lastHealthyRevision after a restart, when the
// revision is no longer in memory.
type RevisionFetcher interface {
	Fetcher
	// FetchRevision reads the revision id whole.
	FetchRevision(ctx context.Context, id string) Revision
}
