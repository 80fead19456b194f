package client

import (
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An error the server answered with a Status is apimachinery's
// *apierrors.StatusError (its code, reason and message, and for 422 every
// field error in Details.Causes), the error client-go returns, so that
// callers read it with apierrors as they would client-go's.

// statusError makes st the error of a request, giving it a message when
// the server sent none.
func statusError(st metav1.Status) error {
	if st.Message == "" {
		st.Message = fmt.Sprintf("the server answered %d %s", st.Code, st.Reason)
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// Code returns the HTTP status of an error from the server, 0 for other
// errors.
func Code(err error) int {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return int(se.Status().Code)
	}
	return 0
}

// Reason returns the Status reason of an error from the server.
func Reason(err error) metav1.StatusReason {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status().Reason
	}
	return ""
}

// IsNotFound: the object (or its namespace) does not exist.
func IsNotFound(err error) bool { return Code(err) == http.StatusNotFound }

// IsAlreadyExists: a create named an object that exists.
func IsAlreadyExists(err error) bool {
	return Code(err) == http.StatusConflict && Reason(err) == metav1.StatusReasonAlreadyExists
}

// IsConflict: a write's resourceVersion or precondition was stale; read
// the object again and retry.
func IsConflict(err error) bool {
	return Code(err) == http.StatusConflict && Reason(err) != metav1.StatusReasonAlreadyExists
}

// IsGone: a watch asked for a revision the server no longer keeps; list
// again.
func IsGone(err error) bool { return Code(err) == http.StatusGone }

// IsForbidden: the identity may not do this, or admission (a quota)
// refused it.
func IsForbidden(err error) bool { return Code(err) == http.StatusForbidden }

// IsUnauthorized: no token, or a bad one.
func IsUnauthorized(err error) bool { return Code(err) == http.StatusUnauthorized }

// IsInvalid: the object failed validation; Status.Details.Causes lists
// every field error.
func IsInvalid(err error) bool { return Code(err) == http.StatusUnprocessableEntity }

// IsBadRequest: the request or its body was malformed.
func IsBadRequest(err error) bool { return Code(err) == http.StatusBadRequest }

// IsTooManyRequests: the identity has too many requests in flight; retry
// after RetryAfter.
func IsTooManyRequests(err error) bool { return Code(err) == http.StatusTooManyRequests }

// IsTooLargeResourceVersion: a watch or list asked for a revision the
// server has not reached; list again.
func IsTooLargeResourceVersion(err error) bool {
	return hasCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// IsNamespaceTerminating: a create was refused because its namespace is
// being deleted.
func IsNamespaceTerminating(err error) bool {
	return hasCause(err, corev1.NamespaceTerminatingCause)
}

// hasCause: err is a Status whose details give a cause of type t.
func hasCause(err error, t metav1.CauseType) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || se.Status().Details == nil {
		return false
	}
	for _, c := range se.Status().Details.Causes {
		if c.Type == t {
			return true
		}
	}
	return false
}
