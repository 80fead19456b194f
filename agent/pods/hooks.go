package pods

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/berth-dev/berth/agent/probe"
	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

// ReasonFailedPostStartHook and ReasonFailedPreStopHook are the events
// of a lifecycle hook that failed, as the kubelet names them.
const (
	ReasonFailedPostStartHook = "FailedPostStartHook"
	ReasonFailedPreStopHook   = "FailedPreStopHook"
)

// runHook runs a lifecycle hook of container c against its run id, as the
// kubelet's handler runner does: exec in the run; httpGet to the pod's
// address (the node's under the exec runtime or hostNetwork), where only
// an unreachable server fails it, not the status; sleep; tcpSocket does
// nothing. The message of a failure names the hook, container and pod.
func (w *podWorker) runHook(ctx context.Context, pod *api.Pod, c *api.Container, id runtime.ID, h *api.LifecycleHandler) (string, error) {
	podName := podRef(pod)
	switch {
	case h.Exec != nil:
		out, code, err := w.m.o.Runtime.Exec(ctx, id, h.Exec.Command)
		if err == nil && code != 0 {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(h.Exec.Command, " "), code, out)
		}
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q", h.Exec.Command, c.Name, podName, err, string(out)), err
		}
	case h.HTTPGet != nil:
		host := w.m.o.NodeIP
		if ips := w.podIPs(); len(ips) > 0 {
			host = ips[0]
		}
		if err := hookHTTPGet(ctx, h.HTTPGet, host, c.Ports); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, podName, err), err
		}
	case h.Sleep != nil:
		t := w.m.o.Clock.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer t.Stop()
		select {
		case <-t.C():
		case <-ctx.Done():
		}
	}
	return "", nil
}

// hookHTTPGet sends a hook's GET; any answer is success.
func hookHTTPGet(ctx context.Context, a *api.HTTPGetAction, host string, ports []api.ContainerPort) error {
	req, err := probe.NewHTTPGet(ctx, a, host, ports, "berth-lifecycle/1.0")
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10*1024))
	return resp.Body.Close()
}

// postStart runs c's postStart hook on its new run, as the kubelet does
// before it calls the container started: a failure is a Warning event,
// and the run is killed (its preStop hook first, within the pod's
// grace), to be restarted by the pod's policy. It says whether the run
// goes on.
func (w *podWorker) postStart(ctx context.Context, pod *api.Pod, c *api.Container, id runtime.ID) bool {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return true
	}
	msg, err := w.runHook(ctx, pod, c, id, c.Lifecycle.PostStart)
	if err == nil {
		return true
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return false
	}
	w.podEvent(pod, api.EventTypeWarning, ReasonFailedPostStartHook, msg)
	w.podEvent(pod, api.EventTypeNormal, ReasonKilling, ReasonFailedPostStartHook)
	if err := w.stopRun(ctx, pod, id, podGrace(pod)); err != nil {
		w.log(pod).err("kill container after its postStart hook failed", err)
	}
	return false
}
