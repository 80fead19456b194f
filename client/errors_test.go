package client_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/client"
)

func TestIsNamespaceTerminating(t *testing.T) {
	forbidden := func(causes ...metav1.StatusCause) error {
		st := metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden}
		if causes != nil {
			st.Details = &metav1.StatusDetails{Causes: causes}
		}
		return fmt.Errorf("create event: %w", &apierrors.StatusError{ErrStatus: st})
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"not a Status", errors.New("connection refused"), false},
		{"forbidden by policy", forbidden(), false},
		{"another cause", forbidden(metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid}), false},
		// As the API server refuses a create in a namespace being deleted.
		{"namespace terminating", forbidden(metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace"}), true},
	} {
		if got := client.IsNamespaceTerminating(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
