package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/plan"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
)

// PlanReport is what the plan endpoint answers, for clients of it.
type PlanReport = plan.Report

// Plan bounds: a plan without ?timeout= gets the default; none gets more
// than the maximum.
const (
	DefaultPlanTimeout = 30 * time.Second
	MaxPlanTimeout     = 10 * time.Minute
	maxPlanBody        = 64 << 20
)

// planHandler serves api.PlanPath.
type planHandler struct {
	store   *store.Store
	sources *sources
	sched   sched.FrameworkOptions
	dataDir string
}

func (h *planHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		apiserver.WriteError(w, planError(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			fmt.Sprintf("a plan is asked for with POST, not %s", r.Method)))
		return
	}
	id, _ := auth.IdentityFromContext(r.Context())
	if id == nil || id.Kind != auth.IdentityAdmin {
		apiserver.WriteError(w, auth.Forbidden(id, auth.Attributes{Verb: "create"}, "only the admin may plan: a plan reads every namespace and node"))
		return
	}
	q := r.URL.Query()
	timeout := DefaultPlanTimeout
	if t := q.Get("timeout"); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("timeout %q: a positive duration such as 30s", t)))
			return
		}
		timeout = min(d, MaxPlanTimeout)
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPlanBody+1))
	if err != nil {
		apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("read the manifests: %v", err)))
		return
	}
	if len(body) > maxPlanBody {
		apiserver.WriteError(w, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the manifests exceed %d bytes", maxPlanBody)))
		return
	}
	opts := plan.Options{Source: q.Get("source"), Revision: q.Get("revision"), Scheduler: h.sched}
	var rev source.Revision
	switch {
	case len(body) > 0:
		rev.Objects, rev.Errors = api.DecodeStream(planDocument, body, api.DecodeOptions{DropStatus: true, Kinds: api.UncheckedCustomKind})
	case opts.Source != "":
		rev, err = h.fetch(ctx, opts.Source, q.Get("ref"))
		if err != nil {
			apiserver.WriteError(w, err)
			return
		}
		if rev.Err != nil {
			apiserver.WriteError(w, planError(http.StatusBadGateway, metav1.StatusReasonServiceUnavailable,
				fmt.Sprintf("source %s: %v", opts.Source, rev.Err)))
			return
		}
		opts.Revision = rev.ID
	default:
		apiserver.WriteError(w, apierrors.NewBadRequest("a plan needs manifests in the body, or ?source=NAME"))
		return
	}
	rep, err := plan.Run(ctx, h.store, rev.Objects, rev.Errors, opts)
	if err != nil {
		apiserver.WriteError(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rep)
}

// plansDir is the folder of the data dir where a plan of a Source
// clones its repository, for as long as the plan runs.
const plansDir = "plans"

// planDocument names the body in the errors of its manifests.
const planDocument = "plan request"

// fetch reads the named Source's place once, at ref when not empty,
// through a fetcher of its own in a directory that goes with it.
func (h *planHandler) fetch(ctx context.Context, name, ref string) (source.Revision, error) {
	obj, err := h.store.Get(api.KindOf(&api.Source{}), "", name)
	if store.IsNotFound(err) {
		return source.Revision{}, apierrors.NewNotFound(api.KindOf(&api.Source{}).GroupResource(), name)
	}
	if err != nil {
		return source.Revision{}, apierrors.NewInternalError(err)
	}
	spec, err := h.sources.fetchSpec(ctx, name, obj.(*api.Source).Spec)
	if err != nil {
		return source.Revision{}, apierrors.NewBadRequest(err.Error())
	}
	if ref != "" {
		spec.Ref = ref
	}
	// A clone of its own: the Source's cache is its fetcher's, which may
	// be reading it now.
	parent := ""
	if h.dataDir != "" {
		parent = filepath.Join(h.dataDir, plansDir)
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return source.Revision{}, apierrors.NewInternalError(err)
		}
	}
	dir, err := os.MkdirTemp(parent, "plan-")
	if err != nil {
		return source.Revision{}, apierrors.NewInternalError(err)
	}
	defer os.RemoveAll(dir)
	f, err := h.sources.fetcherIn(spec, dir)
	if err != nil {
		return source.Revision{}, apierrors.NewBadRequest(err.Error())
	}
	defer f.Close()
	return f.Fetch(ctx, ""), nil
}

func planError(code int32, reason metav1.StatusReason, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
}
