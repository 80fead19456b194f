package store

import (
	"errors"
	"fmt"

	"github.com/berth-dev/berth/api"
)

// Sentinel errors; test with errors.Is. Errors about one object wrap them in
// an *ObjectError that names the object.
var (
	// ErrNotFound: the object does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a create named an object that exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: a write's resourceVersion or UID precondition failed.
	ErrConflict = errors.New("conflict")
	// ErrGone: a watch asked for a revision the change log no longer holds.
	ErrGone = errors.New("revision compacted")
	// ErrFutureRevision: a watch asked for a revision not yet written.
	ErrFutureRevision = errors.New("revision is in the future")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("store closed")
	// ErrWatcherTooSlow: a watcher fell too far behind and was stopped; it
	// may watch again from the last revision it saw.
	ErrWatcherTooSlow = errors.New("watcher fell behind")
	// ErrInvalid: the object cannot be stored as given.
	ErrInvalid = errors.New("invalid")
	// ErrNotLeader: the store follows another control plane's (see
	// Replicated), which alone writes.
	ErrNotLeader = errors.New("this control plane is not the leader: writes go to the leader")
	// ErrNotCommitted: nothing of the request was written, and it
	// cannot be answered otherwise, because a commit before it, which
	// it came after or read from, was not made durable (the backend
	// refused it, or leadership was lost). Trying again is safe.
	ErrNotCommitted = errors.New("not committed")
	// ErrNotCurrent: a read that must see every write acknowledged
	// before it (see Store.Sync) could not learn how far the cluster's
	// commits have gone, or this store did not reach them in time.
	// Nothing was read; trying again is safe.
	ErrNotCurrent = errors.New("cannot confirm that this control plane's copy is current")
)

// ObjectError says which object an error is about.
type ObjectError struct {
	Err       error
	Kind      *api.Kind
	Namespace string
	Name      string
	Detail    string
	// Current is, for a conflict, the stored version the write met:
	// committed, though perhaps not yet durable nor readable, so a base
	// for the writer's next attempt, never an answer to a read.
	Current api.Object
}

func (e *ObjectError) Error() string {
	name := e.Name
	if e.Namespace != "" {
		name = e.Namespace + "/" + e.Name
	}
	msg := fmt.Sprintf("%s %q %s", e.Kind.Resource, name, e.Err)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *ObjectError) Unwrap() error { return e.Err }

func objectError(err error, k *api.Kind, namespace, name, detail string) error {
	return &ObjectError{Err: err, Kind: k, Namespace: namespace, Name: name, Detail: detail}
}

// ConflictCurrent is the stored version a conflicting write met (see
// ObjectError.Current), nil if err is no such conflict.
func ConflictCurrent(err error) api.Object {
	var oe *ObjectError
	if errors.As(err, &oe) && errors.Is(oe.Err, ErrConflict) {
		return oe.Current
	}
	return nil
}

// IsNotFound reports whether err is, or wraps, ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsAlreadyExists reports whether err is, or wraps, ErrAlreadyExists.
func IsAlreadyExists(err error) bool { return errors.Is(err, ErrAlreadyExists) }

// IsConflict reports whether err is, or wraps, ErrConflict.
func IsConflict(err error) bool { return errors.Is(err, ErrConflict) }

// IsGone reports whether err is, or wraps, ErrGone.
func IsGone(err error) bool { return errors.Is(err, ErrGone) }
