package agentproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
)

// podStreamRequest is a pods/exec or pods/attach request checked and
// resolved to a container.
type podStreamRequest struct {
	container string
	query     url.Values
}

// parsePodExecQuery checks the PodExecOptions of a request against the
// pod and builds the agent's query. The container is the one named, or the
// pod's only one (kubectl names one when the pod has several).
func parsePodExecQuery(pod *api.Pod, q url.Values) (podStreamRequest, error) {
	o, err := api.ParsePodExecOptions(q, true)
	if err != nil {
		return podStreamRequest{}, apierrors.NewBadRequest(err.Error())
	}
	return streamRequest(pod, o.Container, o.Query())
}

// parsePodAttachQuery checks the PodAttachOptions of a request against
// the pod and builds the agent's query, the container chosen as for an
// exec.
func parsePodAttachQuery(pod *api.Pod, q url.Values) (podStreamRequest, error) {
	o, err := api.ParsePodAttachOptions(q, true)
	if err != nil {
		return podStreamRequest{}, apierrors.NewBadRequest(err.Error())
	}
	return streamRequest(pod, o.Container, o.Query())
}

// streamRequest resolves the container named (or the pod's only one) of a
// request whose agent query is query.
func streamRequest(pod *api.Pod, container string, query url.Values) (podStreamRequest, error) {
	ctr, err := logContainer(pod, container)
	if err != nil {
		return podStreamRequest{}, err
	}
	return podStreamRequest{container: ctr, query: query}, nil
}

// ServeExec is an apiserver.SubresourceHandler for pods/exec: it passes
// the request's upgrade on to the agent of the pod's node and, once the
// agent has accepted it, copies the connection both ways until either end
// closes it. The user's credentials stay here: the agent sees
// the API server's client certificate, and the API server has already
// authorized the user to create pods/exec.
func (p *Proxy) ServeExec(w http.ResponseWriter, r *http.Request, obj api.Object) {
	p.serveStream(w, r, obj, "exec", parsePodExecQuery, api.ContainerExecPath, "cannot exec into a container in a completed pod")
}

// ServeAttach is an apiserver.SubresourceHandler for pods/attach (kubectl
// attach, kubectl run -i): as ServeExec, it passes the request's upgrade
// on to the agent of the pod's node, which connects it to the container's
// own process.
func (p *Proxy) ServeAttach(w http.ResponseWriter, r *http.Request, obj api.Object) {
	p.serveStream(w, r, obj, "attach", parsePodAttachQuery, api.ContainerAttachPath, "cannot attach a container in a completed pod")
}

// serveStream serves pods/exec or pods/attach (sub): the query read by
// parse, a completed pod refused with completed (kubectl's words) and
// its phase, and the upgrade passed on to the agent's path.
func (p *Proxy) serveStream(w http.ResponseWriter, r *http.Request, obj api.Object, sub string,
	parse func(*api.Pod, url.Values) (podStreamRequest, error), path, completed string) {
	pod, ok := connectPod(w, obj, sub)
	if !ok {
		return
	}
	req, err := parse(pod, r.URL.Query())
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	if pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed {
		apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("%s; current phase is %s", completed, pod.Status.Phase)))
		return
	}
	target, err := p.agentURL(pod, path, req.container, req.query)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	p.proxyUpgrade(w, r, pod, target)
}

// ServePortForward is an apiserver.SubresourceHandler for
// pods/portforward: as ServeExec, it passes the request's upgrade on to
// the agent of the pod's node, which forwards the connections kubectl
// port-forward tunnels in it to the pod's ports.
func (p *Proxy) ServePortForward(w http.ResponseWriter, r *http.Request, obj api.Object) {
	pod, ok := connectPod(w, obj, "portforward")
	if !ok {
		return
	}
	if pod.Status.Phase != api.PodRunning {
		apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("unable to forward port because pod is not running. Current status=%s", pod.Status.Phase)))
		return
	}
	addr, err := p.nodeAgent(pod)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	target := &url.URL{Scheme: "https", Host: addr, Path: strings.Join([]string{api.PortForwardPath, pod.Namespace, pod.Name}, "/")}
	p.proxyUpgrade(w, r, pod, target)
}

// proxyUpgrade passes a request's upgrade on to the agent at target and,
// once the agent has switched protocols, copies the connection both ways
// until either end closes it. The user's credentials stay here: the agent
// sees the API server's client certificate, and the API server has
// already authorized the user.
//
// Every request goes on, not only a WebSocket upgrade: kubectl takes any
// answer to its WebSocket attempt but 101 as a refusal of the protocol,
// retries with SPDY and shows only the second answer, so that answer must
// carry the real fault as well, as kube-apiserver's does by passing SPDY
// on to the kubelet. An agent that cannot be reached is a 503 naming it
// and the cause both times; one that is reached speaks SPDY for exec and
// attach, as the kubelet does, and answers port-forward's with what it
// speaks instead.
func (p *Proxy) proxyUpgrade(w http.ResponseWriter, r *http.Request, pod *api.Pod, target *url.URL) {
	// The session ends when the server shuts down, as a followed log does.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(p.closed, cancel)()
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = target
			pr.Out.Host = target.Host
			// What proves the user to the API server is not the agent's
			// business; the API server's certificate proves the request.
			apiserver.DropCallerCredentials(pr.Out.Header)
			pr.Out.Header.Del("Cookie")
		},
		Transport: p.client.Transport,
		ModifyResponse: func(resp *http.Response) error {
			if err := checkAgentIdentity(pod.Spec.NodeName, resp); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusSwitchingProtocols {
				return agentError(pod, resp)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				apiserver.WriteError(w, err)
				return
			}
			apiserver.WriteError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("node %s: the agent at %s cannot be reached: %v", pod.Spec.NodeName, target.Host, apiserver.UnwrapURLError(err))))
		},
		ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	proxy.ServeHTTP(w, r.WithContext(ctx))
}

// connectPod is the pod of a connect subresource (exec, attach,
// portforward, log);
// false when it has answered the request with an error. The API server
// has already refused any method but GET (a WebSocket's handshake) and
// POST.
func connectPod(w http.ResponseWriter, obj api.Object, sub string) (*api.Pod, bool) {
	pod, ok := obj.(*api.Pod)
	if !ok {
		apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("%s of a %T", sub, obj)))
	}
	return pod, ok
}
