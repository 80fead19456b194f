package apiserver

import (
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// A write with dryRun=All (kubectl's --dry-run=server, and kubectl diff)
// goes through everything a write does (decoding, authorization,
// validation, admission, the store's own checks and conflicts) in a store
// transaction that keeps nothing, and answers with the object as it would
// be, as Kubernetes does: a created object without a resourceVersion, a
// changed one with the resourceVersion it has now.

// dryRunOf reads a write's dryRun parameters: none, or "All".
func dryRunOf(values []string) (bool, error) {
	for _, v := range values {
		if v != metav1.DryRunAll {
			return false, badRequest("dryRun: Unsupported value: %q: supported values: %q", v, metav1.DryRunAll)
		}
	}
	return len(values) > 0, nil
}

// isDryRun reads the dryRun query parameter of a create or update.
func isDryRun(r *http.Request) (bool, error) {
	return dryRunOf(r.URL.Query()["dryRun"])
}

// write runs fn in a store transaction or, for a dry run, in one that
// keeps nothing; then the object fn wrote (out) shows the resourceVersion
// rv in place of the revision the dry run borrowed.
func (s *Server) write(r *http.Request, dry bool, fn func(tx *store.Txn) error, out *api.Object, rv string) error {
	if !dry {
		_, err := s.store.Txn(r.Context(), fn)
		return err
	}
	rev, err := s.store.DryRun(r.Context(), fn)
	if err == nil && *out != nil && (*out).GetResourceVersion() == strconv.FormatUint(rev, 10) {
		// Only an object made in the dry run carries its revision: one
		// the store holds (a write that changed nothing) is shared and
		// left alone.
		(*out).SetResourceVersion(rv)
	}
	return err
}
