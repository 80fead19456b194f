package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/store"
)

// Every error the API answers is a metav1.Status, built with apimachinery's
// constructors so that messages, reasons and causes read exactly as
// Kubernetes' do and kubectl and client-go classify them correctly.

// statusTypeMeta is the type of every Status the server writes.
var statusTypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}

// WriteError answers err as a Status. Errors that already carry a Status
// (apierrors.APIStatus) keep it; authorization refusals become 403; store
// errors become their HTTP equivalents; anything else is a 500. It is
// exported for the handlers other files register with Server.Handle, so
// that every path of the server fails the same way.
func WriteError(w http.ResponseWriter, err error) {
	st := StatusOf(err)
	writeStatus(w, &st)
}

// StatusOf turns any error into the Status the API answers it with.
func StatusOf(err error) metav1.Status {
	var st metav1.Status
	var apiStatus apierrors.APIStatus
	var forbidden *auth.ForbiddenError
	switch {
	case errors.As(err, &apiStatus):
		st = apiStatus.Status()
	case errors.As(err, &forbidden):
		st = auth.ForbiddenStatus(forbidden).Status()
	default:
		st = storeError(err).Status()
	}
	st.TypeMeta = statusTypeMeta
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	return st
}

func writeStatus(w http.ResponseWriter, st *metav1.Status) {
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		h.Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(st)
}

// forbidden wraps an authorizer or admission refusal that is not yet a
// Status as a 403 naming the resource.
func forbidden(k *api.Kind, name string, err error) error {
	var apiStatus apierrors.APIStatus
	var fe *auth.ForbiddenError
	if errors.As(err, &apiStatus) || errors.As(err, &fe) {
		return err
	}
	gr := schema.GroupResource{}
	if k != nil {
		gr = k.GroupResource()
	}
	return apierrors.NewForbidden(gr, name, err)
}

// storeError maps the store's typed errors to Statuses.
func storeError(err error) *apierrors.StatusError {
	var oe *store.ObjectError
	gr := schema.GroupResource{}
	name := ""
	if errors.As(err, &oe) {
		gr = oe.Kind.GroupResource()
		name = oe.Name
	}
	switch {
	case store.IsNotFound(err):
		return apierrors.NewNotFound(gr, name)
	case store.IsAlreadyExists(err):
		return apierrors.NewAlreadyExists(gr, name)
	case store.IsConflict(err):
		detail := err.Error()
		if oe != nil && oe.Detail != "" {
			detail = oe.Detail
		}
		return apierrors.NewConflict(gr, name, errors.New(detail))
	case store.IsNamespaceTerminating(err):
		// With Kubernetes' cause, which controllers and kubectl look for.
		se := apierrors.NewForbidden(gr, name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", oe.Namespace))
		se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    "NamespaceTerminating", // k8s.io/api/core/v1.NamespaceTerminatingCause
			Message: fmt.Sprintf("namespace %s is being terminated", oe.Namespace),
			Field:   "metadata.namespace",
		})
		return se
	case store.IsForbidden(err):
		// A store admission hook's refusal, a quota's: its message reads
		// as Kubernetes' (`pods "x" is forbidden: exceeded quota: …`).
		detail := err.Error()
		if oe != nil && oe.Detail != "" {
			detail = oe.Detail
		}
		return apierrors.NewForbidden(gr, name, errors.New(detail))
	case store.IsGone(err):
		return apierrors.NewResourceExpired("too old resource version: " + err.Error())
	case errors.Is(err, store.ErrInvalid):
		return apierrors.NewBadRequest(err.Error())
	case errors.Is(err, store.ErrNotCommitted):
		// Nothing of this request was written: an earlier commit,
		// which it came after or read from, failed. Sent again, it
		// meets what is durable (or the next leader).
		se := apierrors.NewServiceUnavailable(err.Error())
		se.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
		return se
	case errors.Is(err, store.ErrNotCurrent):
		// A read through a control plane that could not confirm its
		// copy holds every acknowledged write: nothing was read.
		se := apierrors.NewServiceUnavailable(err.Error())
		se.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
		return se
	case errors.Is(err, store.ErrClosed):
		return apierrors.NewServiceUnavailable("the store is closed: the server is shutting down")
	case errors.Is(err, store.ErrNotLeader):
		// A write that met this control plane as leadership changed
		// hands: the next one finds the leader.
		se := apierrors.NewServiceUnavailable(err.Error())
		se.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
		return se
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("the request ended before the write was acknowledged: "+err.Error(), 1)
	}
	return apierrors.NewInternalError(err)
}

// badRequest is a 400 with a formatted message.
func badRequest(format string, args ...any) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

// malformedResourceVersion is the 400 of a resourceVersion that is no
// revision, naming the field it is in (metadata.resourceVersion,
// preconditions.resourceVersion): Kubernetes' versioner refuses it so,
// where a comparison with the stored one would answer 409 and send the
// client reading and retrying the same bad write.
func malformedResourceVersion(fieldPath, rv string) error {
	msg := field.Invalid(field.NewPath(fieldPath), rv, "must be a revision, a decimal number").Error()
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusBadRequest,
		Reason:  metav1.StatusReasonBadRequest,
		Message: msg,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: fieldPath, Message: msg}}},
	}}
}

// checkResourceVersion refuses rv, the value of fieldPath, unless it is
// empty or a revision.
func checkResourceVersion(fieldPath, rv string) error {
	if rv == "" {
		return nil
	}
	if _, err := strconv.ParseUint(rv, 10, 64); err != nil || rv[0] == '+' {
		return malformedResourceVersion(fieldPath, rv)
	}
	return nil
}

// notFoundPath answers a path that names no resource.
func notFoundPath() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotFound,
		Reason:  metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeUnexpectedServerResponse, Message: "404 page not found"}}},
	}}
}

// methodNotAllowed answers a verb a path does not take.
func methodNotAllowed(k *api.Kind, method string) error {
	if k == nil {
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusMethodNotAllowed,
			Reason:  metav1.StatusReasonMethodNotAllowed,
			Message: fmt.Sprintf("the server does not allow %s on this path", method),
		}}
	}
	return apierrors.NewMethodNotSupported(k.GroupResource(), strings.ToLower(method))
}

// unsupportedMediaType answers a body of a type the verb does not take.
func unsupportedMediaType(contentType string, supported ...string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format %q: accepted media types are %s", contentType, strings.Join(supported, ", ")),
	}}
}

// notAcceptable answers an Accept header the server cannot satisfy.
func notAcceptable(accept string, offered ...string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: fmt.Sprintf("only the following media types are accepted: %s (asked for %q)", strings.Join(offered, ", "), accept),
	}}
}

// invalid is the 422 of an object that fails validation: every field
// error in the message and in details.causes.
func invalid(k *api.Kind, name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(k.GVK.GroupKind(), name, errs)
}

// decodeFailed is the 400 of a body the decoder refused: every problem it
// found, each as a cause with its field path, so a client can show them
// all at once as `berth validate` does.
func decodeFailed(k *api.Kind, errs api.ErrorList) error {
	causes := make([]metav1.StatusCause, 0, len(errs))
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: e.Field, Message: e.Message})
		msgs = append(msgs, e.Error())
	}
	what := "the request body"
	if k != nil {
		what = k.GVK.Kind + " in the request body"
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusBadRequest,
		Reason:  metav1.StatusReasonBadRequest,
		Message: fmt.Sprintf("%s is malformed: %s", what, strings.Join(msgs, "; ")),
		Details: &metav1.StatusDetails{Causes: causes},
	}}
}
