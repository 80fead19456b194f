package server

import (
	"context"
	"errors"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// serveAttach connects kubectl attach (and kubectl run -i) to a
// container's own process: GET
// /attach/{namespace}/{pod}/{container}?stdin=…&stdout=…&stderr=…&tty=…,
// upgraded to a WebSocket as an exec is, that carries what the process
// writes from then on and what the user types to it, until its output
// ends, the session's input ends (unless the container is stdinOnce: its
// input is closed then, and the output goes on) or the user leaves. The
// process goes on either way: it is the container.
func (s *containerServer) serveAttach(w http.ResponseWriter, r *http.Request) {
	req, err := api.ParsePodAttachOptions(r.URL.Query(), false)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.serveStreams(w, r, "attach", streamRequest{stdin: req.Stdin, stdout: req.Stdout, stderr: req.Stderr, tty: req.TTY},
		func(ctx context.Context, id runtime.ID, st sessionStreams) metav1.Status {
			err := s.opts.Runtime.Attach(ctx, id, runtime.AttachOptions{Stdin: st.stdin, Stdout: st.stdout, Stderr: st.stderr, Resize: st.resize})
			return attachStatus(err)
		})
}

// attachStatus is the outcome kubectl reads from the error channel:
// Success once the session is over, or why it could not go on, as the
// kubelet says it.
func attachStatus(err error) metav1.Status {
	if err == nil {
		return metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusSuccess}
	}
	// The runtime names the run ("attach UID/NAME/N: …"), which means
	// nothing to the user: the cause alone.
	if cause := errors.Unwrap(err); cause != nil {
		err = cause
	}
	return metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Reason: metav1.StatusReasonInternalError,
		Message: "error attaching to container: " + err.Error(),
	}
}
