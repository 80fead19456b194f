package controlplane

import (
	"fmt"
	"io"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/store/bolt"
	"github.com/berth-dev/berth/store/etcd"
)

// SnapshotPath serves a consistent copy of the store file to the admin
// (`berth snapshot save`).
//
// It sits in berth's own API group, beside /apis/berth.dev/v1/sources,
// rather than under /debug/: a backup is an operation of the cluster,
// as Nomad's /v1/operator/snapshot is, not a diagnostic. It is not a
// resource (no discovery entry, no list or watch), and its singular name
// cannot meet a resource's, which are plural. Like every /apis path it
// needs a token; only the admin may read it.
const SnapshotPath = "/apis/berth.dev/v1/snapshot"

// SnapshotRevisionHeader carries the revision of the copy.
const SnapshotRevisionHeader = "X-Berth-Store-Revision"

// snapshotter is a backend that can copy itself while it is written.
type snapshotter interface {
	WriteSnapshot(w io.Writer, begin func(bolt.SnapshotInfo) error) (bolt.SnapshotInfo, error)
}

// snapshotHandler answers GET SnapshotPath with the store file, taken in
// one read transaction (writes go on), its length in Content-Length.
type snapshotHandler struct {
	backend any
}

func (h *snapshotHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		apiserver.WriteError(w, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
			Message: fmt.Sprintf("the store snapshot is read with GET, not %s", r.Method),
		}})
		return
	}
	id, _ := auth.IdentityFromContext(r.Context())
	if id == nil || id.Kind != auth.IdentityAdmin {
		apiserver.WriteError(w, auth.Forbidden(id, auth.Attributes{Verb: auth.VerbGet}, "only the admin may take a snapshot of the store"))
		return
	}
	snap, ok := h.backend.(snapshotter)
	if !ok {
		msg := "the server keeps its store in memory (--store memory): there is no store file to snapshot, and nothing is kept to back up"
		if _, ok := h.backend.(*etcd.Backend); ok {
			msg = "the store is in etcd (--store etcd://…): back it up with etcdctl snapshot save, which holds every control plane's state"
		}
		apiserver.WriteError(w, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: msg,
		}})
		return
	}
	started := false
	_, err := snap.WriteSnapshot(w, func(info bolt.SnapshotInfo) error {
		started = true
		hd := w.Header()
		hd.Set("Content-Type", "application/octet-stream")
		hd.Set("Content-Length", strconv.FormatInt(info.Size, 10))
		hd.Set(SnapshotRevisionHeader, strconv.FormatUint(info.Revision, 10))
		w.WriteHeader(http.StatusOK)
		return nil
	})
	if err != nil && !started {
		apiserver.WriteError(w, err)
		return
	}
	if err != nil {
		// The header is out: cut the stream, so that the client sees it
		// short rather than whole.
		panic(http.ErrAbortHandler)
	}
}
