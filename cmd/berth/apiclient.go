package main

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// apiClient is what the user commands need from the control plane. It is
// declared here, where it is used, with the methods of client.Client
// (typed by *api.Kind) so that the commands read the same whichever
// client sits behind it; client_adapter.go connects the real one.
//
// Errors from the server must satisfy apierrors.APIStatus (as
// *apierrors.StatusError does): the commands read the reason and code
// from it to print kubectl's `Error from server (NotFound): …` and to tell
// "absent" from "failed".
type apiClient interface {
	Get(ctx context.Context, k *api.Kind, ns, name string) (api.Object, error)
	// List returns the objects and the resourceVersion a watch can start
	// from.
	List(ctx context.Context, k *api.Kind, ns string, opts listOptions) ([]api.Object, string, error)
	Watch(ctx context.Context, k *api.Kind, ns string, opts listOptions) (watcher, error)
	Create(ctx context.Context, k *api.Kind, ns string, obj api.Object) (api.Object, error)
	// Update replaces an object; obj carries the resourceVersion it was
	// read at, and the server answers 409 Conflict when it is stale.
	Update(ctx context.Context, k *api.Kind, ns string, obj api.Object) (api.Object, error)
	// Patch applies a JSON merge patch.
	Patch(ctx context.Context, k *api.Kind, ns, name string, patch []byte) (api.Object, error)
	Delete(ctx context.Context, k *api.Kind, ns, name string, opts deleteOptions) error
}

// listOptions narrow a list or a watch (SPEC §5).
type listOptions struct {
	LabelSelector string
	FieldSelector string
	// ResourceVersion is where a watch starts: the list's revision, so
	// that no change between the list and the watch is missed.
	ResourceVersion string
}

// deleteOptions say how a delete cascades and how long the pods have.
type deleteOptions struct {
	// PropagationPolicy is Background, Foreground or Orphan.
	PropagationPolicy string
	// GracePeriodSeconds overrides the pods' terminationGracePeriodSeconds
	// when set.
	GracePeriodSeconds *int64
}

// Watch event types (SPEC §5).
const (
	watchAdded    = "ADDED"
	watchModified = "MODIFIED"
	watchDeleted  = "DELETED"
	watchBookmark = "BOOKMARK"
	watchError    = "ERROR"
)

// watchEvent is one change a watch delivers.
type watchEvent struct {
	Type   string
	Object api.Object
}

// watcher delivers the events of one watch until its context ends, the
// server closes it (errWatchClosed) or Stop is called.
type watcher interface {
	Next(ctx context.Context) (watchEvent, error)
	// Stop ends the watch and waits for whatever reads it.
	Stop()
}

// errWatchClosed is what a watcher returns when the server ended the
// watch cleanly (its timeout, a restart): nothing is wrong, and a new
// watch from the last revision seen goes on where it stopped.
var errWatchClosed = errors.New("watch closed by the server")

// errorMessage renders an error the way kubectl prints it: an error the
// server answered as `Error from server (Reason): message`, anything else
// (the server unreachable, a bad kubeconfig) as `Error: …`, as every
// berth command prints its errors.
func errorMessage(err error) string {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		st := s.Status()
		return serverErrorPrefix(st) + ": " + st.Message
	}
	return "Error: " + err.Error()
}

// serverErrorPrefix is how kubectl starts the line of an error the server
// answered: `Error from server (NotFound)`, or without the reason when it
// gave none.
func serverErrorPrefix(st metav1.Status) string {
	if st.Reason == "" {
		return "Error from server"
	}
	return fmt.Sprintf("Error from server (%s)", st.Reason)
}

// reportedFailure ends a command that failed after it printed why, each
// error where it happened, as kubectl goes on past one missing object.
func reportedFailure() error {
	return &exitError{code: exitFailure}
}
