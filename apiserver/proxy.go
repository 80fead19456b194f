package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
)

// The proxy subresources pass a request on to a pod's or a service's HTTP
// port from the API server's own process, as kube-apiserver's do:
//
//	/api/v1/namespaces/{ns}/pods/{[scheme:]name[:port]}/proxy[/{path}]
//	/api/v1/namespaces/{ns}/services/{[scheme:]name[:port]}/proxy[/{path}]
//
// for every method; the query, the body and an upgrade go through, the
// answer streams back. Under the exec runtime a pod's IP is its node's, so
// the API server reaches it as it reaches the node.

// SubresourceProxy is the proxy subresource of pods and services.
const SubresourceProxy = "proxy"

// Defaults of Config's proxy timeouts.
const (
	DefaultProxyDialTimeout           = 10 * time.Second
	DefaultProxyResponseHeaderTimeout = time.Minute
	proxyTLSHandshakeTimeout          = 10 * time.Second
)

// proxyVerbs are the verbs discovery lists for the proxy subresources,
// those Kubernetes lists.
var proxyVerbs = []string{auth.VerbCreate, auth.VerbDelete, auth.VerbGet, auth.VerbPatch, auth.VerbUpdate}

var (
	proxyPodKind       = api.MustLookupResource("pods")
	proxyServiceKind   = api.MustLookupResource("services")
	proxyEndpointsKind = api.MustLookupResource("endpoints")
)

// proxyable: the kind has the proxy subresource.
func proxyable(k *api.Kind) bool { return k == proxyPodKind || k == proxyServiceKind }

// proxyOptionsKind is the kind discovery names for a proxy subresource.
func proxyOptionsKind(k *api.Kind) string { return k.GVK.Kind + "ProxyOptions" }

// proxyVerb authorizes a proxied request by its method, as Kubernetes
// does: whoever may get pods/proxy may GET through it, whoever may
// create it may POST.
func proxyVerb(r *http.Request, k *api.Kind) (string, error) {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return auth.VerbGet, nil
	case http.MethodPost:
		return auth.VerbCreate, nil
	case http.MethodPut:
		return auth.VerbUpdate, nil
	case http.MethodPatch:
		return auth.VerbPatch, nil
	case http.MethodDelete:
		return auth.VerbDelete, nil
	}
	return "", methodNotAllowed(k, r.Method)
}

// newProxyTransport is how the API server reaches pods: bounded dials and
// waits for an answer's headers (a dead pod must not hold a request
// forever), no bound on the answer itself (it streams), and no environment
// proxy (pods are on the cluster's network). A pod's https port is not
// verified, as kube-apiserver does not verify it: the pod holds no
// certificate the cluster issued.
func newProxyTransport(dial, responseHeader time.Duration) *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // see above
		TLSHandshakeTimeout:   proxyTLSHandshakeTimeout,
		ResponseHeaderTimeout: responseHeader,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
	}
}

// proxyPath is the escaped path a proxy request passes on, after the
// proxy segment, which is the depth-th of the request's path: "" for none,
// "/" for a bare slash.
func proxyPath(r *http.Request, depth int) (string, error) {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	if len(segs) < depth || segs[depth-1] != SubresourceProxy {
		return "", notFoundPath()
	}
	if len(segs) == depth {
		return "", nil
	}
	return "/" + strings.Join(segs[depth:], "/"), nil
}

// serveProxy authorizes a proxy request, finds where it goes, and passes
// it on.
func (s *Server) serveProxy(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	t, ok := parseProxyTarget(req.name)
	if !ok {
		WriteError(w, badRequest("invalid %s request %q: the name is [http:|https:]name[:port]", req.kind.Singular, req.name))
		return
	}
	id := req.name
	req.name = t.name
	obj, ok := s.authorizedObject(w, r, req)
	if !ok {
		return
	}
	path, err := proxyPath(r, req.proxyDepth)
	if err != nil {
		WriteError(w, err)
		return
	}
	host, err := s.proxyHost(obj, t, id)
	if err != nil {
		WriteError(w, err)
		return
	}
	upgrade := r.Header.Get("Upgrade") != ""
	if path == "" && !upgrade && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		// A relative link in the page at the root must resolve under
		// .../proxy/, not beside it: Kubernetes redirects likewise.
		loc := r.URL.EscapedPath() + "/"
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		w.Header().Set("Location", loc)
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	scheme := t.scheme
	if scheme == "" {
		scheme = "http"
	}
	target := &url.URL{Scheme: scheme, Host: host, RawPath: path}
	if target.Path, err = url.PathUnescape(path); err != nil {
		WriteError(w, badRequest("invalid path %q: %v", path, err))
		return
	}
	if target.Path == "" {
		target.Path = "/"
	}
	prefix := strings.TrimSuffix(r.URL.EscapedPath(), path)
	s.passOn(w, r, fmt.Sprintf("%s %q", req.kind.Singular, t.name), target, prefix)
}

// proxyHost finds the address of the pod or service obj.
func (s *Server) proxyHost(obj api.Object, t proxyTarget, id string) (string, error) {
	switch o := obj.(type) {
	case *api.Pod:
		return podProxyHost(o, t)
	case *api.Service:
		var eps *api.Endpoints
		got, err := s.store.Get(proxyEndpointsKind, o.Namespace, o.Name)
		switch {
		case err != nil && !isNotFound(err):
			return "", err
		case err == nil:
			eps, _ = got.(*api.Endpoints)
		}
		return serviceProxyHost(o, eps, t, id, func(a api.EndpointAddress) bool { return s.endpointPodHolds(o.Namespace, a) })
	}
	return "", badRequest("%T has no proxy", obj)
}

// endpointPodHolds reports whether an endpoint's address is still its
// pod's, as Kubernetes checks before it proxies to it: the endpoints may
// lag a pod that has gone.
func (s *Server) endpointPodHolds(namespace string, a api.EndpointAddress) bool {
	ref := a.TargetRef
	if ref == nil || ref.Kind != "Pod" || ref.Namespace != namespace {
		return false
	}
	obj, err := s.store.Get(proxyPodKind, namespace, ref.Name)
	if err != nil {
		return false
	}
	pod, ok := obj.(*api.Pod)
	if !ok {
		return false
	}
	if pod.Status.PodIP == a.IP {
		return true
	}
	for _, ip := range pod.Status.PodIPs {
		if ip.IP == a.IP {
			return true
		}
	}
	return false
}

// proxyCredentialHeaders prove the caller to the API server, and are no
// business of the pod's. A pod's own cookies go through: a web app
// behind the proxy keeps its sessions.
var proxyCredentialHeaders = []string{"Authorization", "Impersonate-User", "Impersonate-Group", "Impersonate-Uid"}

// DropCallerCredentials takes what proves the caller to the API server
// out of a request the server passes on to a pod or an agent.
func DropCallerCredentials(h http.Header) {
	for _, k := range proxyCredentialHeaders {
		h.Del(k)
	}
	for k := range h {
		if strings.HasPrefix(k, "Impersonate-Extra-") {
			h.Del(k)
		}
	}
}

// passOn sends the request to target and streams the answer back. An
// upgrade (a WebSocket) switches and is copied both ways until either end
// closes it or the server shuts down. prefix is the path under which the
// caller sees the pod's root (…/proxy), for its redirects.
func (s *Server) passOn(w http.ResponseWriter, r *http.Request, what string, target *url.URL, prefix string) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.stopCtx, cancel)()
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := *target
			u.RawQuery = pr.In.URL.RawQuery
			pr.Out.URL = &u
			pr.Out.Host = ""
			pr.SetXForwarded()
			DropCallerCredentials(pr.Out.Header)
		},
		Transport: s.proxyTransport,
		ModifyResponse: func(resp *http.Response) error {
			// The pod's links may name its own address, or the host the
			// caller asked, which it learns from X-Forwarded-Host.
			proxyResponseHeaders(resp.Header, prefix, target.Host, r.Host)
			return rewriteHTML(resp, prefix, target.Host, r.Host)
		},
		// Every write is flushed: a stream or server-sent events reach the
		// caller as the pod writes them.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil && s.shuttingDown() {
				WriteError(w, apierrors.NewServiceUnavailable("the API server is shutting down"))
				return
			}
			WriteError(w, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusBadGateway, Reason: metav1.StatusReasonInternalError,
				Message: fmt.Sprintf("error trying to reach %s at %s: %v", what, target.Host, UnwrapURLError(err)),
			}})
		},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	proxy.ServeHTTP(w, r.WithContext(ctx))
}

// corsHeaders are what would let a page elsewhere read the pod's answer
// with the caller's credentials for the API server; Kubernetes drops
// them from proxied answers too.
var corsHeaders = []string{"Access-Control-Allow-Credentials", "Access-Control-Allow-Headers", "Access-Control-Allow-Methods", "Access-Control-Allow-Origin"}

// proxyResponseHeaders fits a pod's answer to where the caller sees it:
// no CORS grants, and a redirect to a path of the pod's (or to an own
// host: the pod's address, the host the caller asked) goes to that path
// under prefix, as Kubernetes' proxy rewrites it. A redirect elsewhere, or relative to the page, stays (an
// empty Location too: proxiedLocation leaves what has no path).
func proxyResponseHeaders(h http.Header, prefix string, own ...string) {
	for _, k := range corsHeaders {
		h.Del(k)
	}
	if loc, ok := proxiedLocation(h.Get("Location"), prefix, own...); ok {
		h.Set("Location", loc)
	}
}

// UnwrapURLError drops the method and URL net/http puts around a
// transport error, for a message that names the address already.
func UnwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
