package agentproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/apiserver/auth"
	"github.com/berth-dev/berth/store"
)

// Timeouts of the container proxy's connections to agents. The stream itself
// has none: a followed log lasts as long as its user wants.
const (
	agentDialTimeout     = 10 * time.Second
	agentTLSTimeout      = 10 * time.Second
	agentResponseTimeout = 30 * time.Second
	// agentErrorBodyLimit caps what is read of an agent's error answer.
	agentErrorBodyLimit = 64 << 10
)

// Proxy serves pods/log, pods/exec, pods/attach, pods/portforward
// and the resource metrics of metrics.k8s.io: it finds the node a pod is
// bound to and reaches that node's agent (for the metrics, every agent
// needed), over TLS verified against the node CA, presenting the API
// server's client certificate. One transport serves every request, so
// connections to agents are kept.
type Proxy struct {
	store  *store.Store
	client *http.Client
	log    *slog.Logger
	// closed ends every stream when the server shuts down, so that a user
	// following a log does not hold the shutdown up.
	closed context.Context
	close  context.CancelFunc
}

// New makes the proxy; roots verify agents, clientCert is what the
// API server presents to them (CN api.APIServerClientName).
func New(st *store.Store, roots *x509.CertPool, clientCert tls.Certificate, log *slog.Logger) *Proxy {
	tr := &http.Transport{
		DialContext: (&net.Dialer{Timeout: agentDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig: &tls.Config{
			RootCAs:      roots,
			Certificates: []tls.Certificate{clientCert},
			MinVersion:   tls.VersionTLS12,
		},
		TLSHandshakeTimeout:   agentTLSTimeout,
		ResponseHeaderTimeout: agentResponseTimeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	closed, closeFn := context.WithCancel(context.Background())
	return &Proxy{store: st, client: &http.Client{Transport: tr}, log: log, closed: closed, close: closeFn}
}

// Register serves, on a, the pods' log, exec, attach and portforward
// subresources and metrics.k8s.io (see registerMetrics), whose readers
// authz authorizes.
func (p *Proxy) Register(a *apiserver.Server, authz auth.Authorizer) error {
	pods, ok := api.LookupResource("pods")
	if !ok {
		return errors.New("agent proxy: no pods kind")
	}
	a.HandleSubresource(pods, "log", p.Serve)
	a.HandleSubresource(pods, "exec", p.ServeExec)
	a.HandleSubresource(pods, "attach", p.ServeAttach)
	a.HandleSubresource(pods, "portforward", p.ServePortForward)
	p.registerMetrics(a, authz)
	return nil
}

// Close ends the streams in flight (each ends as if the log had) and
// drops idle connections to agents. Requests after it are still served.
func (p *Proxy) Close() {
	p.close()
	p.client.CloseIdleConnections()
}

// podLogRequest is a pods/log request checked and resolved to a node.
type podLogRequest struct {
	container string
	query     url.Values
}

// Serve is an apiserver.SubresourceHandler for pods/log.
func (p *Proxy) Serve(w http.ResponseWriter, r *http.Request, obj api.Object) {
	pod, ok := connectPod(w, obj, "log")
	if !ok {
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		apiserver.WriteError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/log"}, r.Method))
		return
	}
	req, err := parsePodLogQuery(pod, r.URL.Query())
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	target, err := p.agentURL(pod, api.ContainerLogsPath, req.container, req.query)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(p.closed, cancel)()
	up, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	resp, err := p.client.Do(up)
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		if ctx.Err() != nil {
			apiserver.WriteError(w, apierrors.NewServiceUnavailable("the API server is shutting down"))
			return
		}
		apiserver.WriteError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("node %s: the agent at %s cannot be reached: %v", pod.Spec.NodeName, target.Host, apiserver.UnwrapURLError(err))))
		return
	}
	defer resp.Body.Close()
	if err := checkAgentIdentity(pod.Spec.NodeName, resp); err != nil {
		apiserver.WriteError(w, err)
		return
	}
	if resp.StatusCode != http.StatusOK {
		apiserver.WriteError(w, agentError(pod, resp))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	if err := copyFlushing(w, rc, resp.Body); err != nil && ctx.Err() == nil {
		p.log.Warn("pod log stream ended", "pod", pod.Namespace+"/"+pod.Name, "node", pod.Spec.NodeName, "err", err)
	}
}

// parsePodLogQuery checks the PodLogOptions of a request against the pod
// and builds the agent's query. sinceSeconds goes on as it is: the agent
// that stamped the lines counts it back on its own clock, as the kubelet
// does.
func parsePodLogQuery(pod *api.Pod, q url.Values) (podLogRequest, error) {
	o, err := api.ParsePodLogOptions(q, true)
	if err != nil {
		return podLogRequest{}, apierrors.NewBadRequest(err.Error())
	}
	ctr, err := logContainer(pod, o.Container)
	if err != nil {
		return podLogRequest{}, err
	}
	return podLogRequest{container: ctr, query: o.Query()}, nil
}

// logContainer is the container whose log is asked for: the one named,
// or the pod's only container. The messages are the API server's, which
// kubectl users know.
func logContainer(pod *api.Pod, name string) (string, error) {
	var names, initNames []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.InitContainers {
		initNames = append(initNames, c.Name)
	}
	if name == "" {
		if len(names) == 1 {
			return names[0], nil
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", pod.Name, strings.Join(names, " "))
		if len(initNames) > 0 {
			msg += fmt.Sprintf(" or one of the init containers: [%s]", strings.Join(initNames, " "))
		}
		return "", apierrors.NewBadRequest(msg)
	}
	if !slices.Contains(names, name) && !slices.Contains(initNames, name) {
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
	}
	return name, nil
}

// agentURL is where the pod's node serves prefix (api.ContainerLogsPath,
// api.ContainerExecPath or api.ContainerAttachPath) for the container,
// with query.
func (p *Proxy) agentURL(pod *api.Pod, prefix, container string, query url.Values) (*url.URL, error) {
	addr, err := p.nodeAgent(pod)
	if err != nil {
		return nil, err
	}
	return &url.URL{
		Scheme:   "https",
		Host:     addr,
		Path:     strings.Join([]string{prefix, pod.Namespace, pod.Name, container}, "/"),
		RawQuery: query.Encode(),
	}, nil
}

// nodeAgent is the address of the agent of the pod's node.
func (p *Proxy) nodeAgent(pod *api.Pod) (string, error) {
	nodeName := pod.Spec.NodeName
	if nodeName == "" {
		return "", apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	obj, err := p.store.Get(nodeKind, "", nodeName)
	if err != nil {
		if store.IsNotFound(err) {
			return "", apierrors.NewServiceUnavailable(fmt.Sprintf("node %s of pod %s does not exist", nodeName, pod.Name))
		}
		return "", fmt.Errorf("node %s: %w", nodeName, err)
	}
	node, ok := obj.(*api.Node)
	if !ok {
		return "", fmt.Errorf("node %s: unexpected %T", nodeName, obj)
	}
	return agentAddress(node)
}

// agentAddress is where a node's agent listens: its InternalIP and the
// port it registered.
func agentAddress(node *api.Node) (string, error) {
	host := ""
	for _, a := range node.Status.Addresses {
		if a.Type == api.NodeInternalIP {
			host = a.Address
			break
		}
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	switch {
	case host == "":
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("node %s reports no InternalIP address to reach its agent at", node.Name))
	case port <= 0:
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("node %s reports no agent port", node.Name))
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port))), nil
}

// checkAgentIdentity makes sure the agent that answered holds the serving
// certificate of the pod's node: a node can change the addresses it
// reports, and must not be able to stand in for another node's agent.
func checkAgentIdentity(nodeName string, resp *http.Response) error {
	want := "system:node:" + nodeName
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("node %s: the agent presented no certificate", nodeName))
	}
	if got := resp.TLS.PeerCertificates[0].Subject.CommonName; got != want {
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusBadGateway, Reason: metav1.StatusReasonInternalError,
			Message: fmt.Sprintf("node %s: the agent at %s presented the certificate of %q, not %q", nodeName, resp.Request.URL.Host, got, want),
		}}
	}
	return nil
}

// agentError turns an agent's refusal into a Status: its 400 and 404 are
// the user's, anything else is a failure between the API server and the
// agent.
func agentError(pod *api.Pod, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, agentErrorBodyLimit))
	msg := strings.TrimSpace(string(body))
	switch resp.StatusCode {
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(msg)
	case http.StatusNotFound:
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound, Message: msg,
		}}
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusBadGateway, Reason: metav1.StatusReasonInternalError,
		Message: fmt.Sprintf("node %s: the agent answered %d: %s", pod.Spec.NodeName, resp.StatusCode, msg),
	}}
}

// copyFlushing copies the agent's answer to the user, flushing after each
// read so that a followed log is seen as it is written.
func copyFlushing(w io.Writer, rc *http.ResponseController, body io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
