package store

import (
	"errors"
	"fmt"

	"github.com/berth-dev/berth/api"
)

// ErrForbidden: an admission hook refused the write, as a quota refuses an
// object over its limits. The *ObjectError that wraps it carries the
// hook's message in Detail, for the API to answer 403 with.
var ErrForbidden = errors.New("forbidden")

// IsForbidden reports whether err is, or wraps, ErrForbidden.
func IsForbidden(err error) bool { return errors.Is(err, ErrForbidden) }

// ErrNamespaceTerminating: an admission hook refused to create an object
// in a namespace that is being deleted (Kubernetes' NamespaceLifecycle).
// It is ErrForbidden too. A controller that would create there (a
// ReplicaSet's pods, a Service's Endpoints) takes it as nothing to do, as
// Kubernetes' controllers take the NamespaceTerminating cause.
var ErrNamespaceTerminating = fmt.Errorf("%w", ErrForbidden)

// IsNamespaceTerminating reports whether err is, or wraps,
// ErrNamespaceTerminating.
func IsNamespaceTerminating(err error) bool { return errors.Is(err, ErrNamespaceTerminating) }

// AdmitFunc checks a write inside the transaction that makes it, so that
// every writer (the API, the applier, the controllers) meets the same rule
// and the check is serialised with every other write: what it reads through
// tx is exact, its own earlier writes included. It is called before each
// object is stored: obj is the object as it will be stored (nil when it is
// removed), old as it stands (nil when it is created). It may write through
// tx (the hooks run again for those writes), may change obj, which belongs
// to the store from the write on, and must not call Store methods that
// write, which would wait for the transaction it is in. An error aborts
// the write and, unless the caller handles it, the whole transaction.
type AdmitFunc func(tx *Txn, k *api.Kind, obj, old api.Object) error

// admit runs the store's hooks over one write.
func (tx *Txn) admit(k *api.Kind, obj, old api.Object) error {
	for _, fn := range tx.store.opts.Admit {
		if err := fn(tx, k, obj, old); err != nil {
			return err
		}
	}
	return nil
}
