package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// serveExec runs a command in a container for kubectl exec: GET
// /exec/{namespace}/{pod}/{container}?command=…&stdin=…&stdout=…&stderr=…&tty=…,
// upgraded to a WebSocket that carries the command's streams until it
// ends, then its outcome. The command ends with the connection.
func (s *containerServer) serveExec(w http.ResponseWriter, r *http.Request) {
	req, err := api.ParsePodExecOptions(r.URL.Query(), false)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.serveStreams(w, r, "exec", streamRequest{stdin: req.Stdin, stdout: req.Stdout, stderr: req.Stderr, tty: req.TTY},
		func(ctx context.Context, id runtime.ID, st sessionStreams) metav1.Status {
			code, err := s.opts.Runtime.ExecStream(ctx, id, runtime.ExecOptions{
				Argv: req.Command, TTY: req.TTY, Stdin: st.stdin, Stdout: st.stdout, Stderr: st.stderr, Resize: st.resize,
			})
			return execStatus(code, err)
		})
}

// execStatus is the outcome kubectl reads from the error channel: Success,
// NonZeroExitCode with the code as the cause (kubectl exits with it), or
// a failure to run the command at all.
func execStatus(code int, err error) metav1.Status {
	switch {
	case err != nil:
		// The runtime names the run ("exec in UID/NAME/N: …"), which
		// means nothing to the user: the cause alone.
		if cause := errors.Unwrap(err); cause != nil {
			err = cause
		}
		return metav1.Status{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
			Status:   metav1.StatusFailure, Reason: metav1.StatusReasonInternalError,
			Message: err.Error(),
		}
	case code != 0:
		return metav1.Status{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
			Status:   metav1.StatusFailure, Reason: "NonZeroExitCode",
			Message: fmt.Sprintf("command terminated with non-zero exit code: exit status %d", code),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "ExitCode", Message: strconv.Itoa(code)}}},
		}
	}
	return metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusSuccess}
}
