package ingress

import (
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/berth-dev/berth/api"
)

// Objects is what a routing table is built from: the objects of every
// namespace, as the informers hold them.
type Objects struct {
	Ingresses      []*api.Ingress
	Classes        []*api.IngressClass
	Services       []*api.Service
	EndpointSlices []*api.EndpointSlice
	Secrets        []*api.Secret
}

// Table is one immutable routing table; the proxy swaps a whole new one
// in when the objects change.
type Table struct {
	// exact maps a lowercase host to its routes; wildcard maps the
	// suffix of a wildcard host (".example.com" for "*.example.com").
	exact    map[string]*hostRoutes
	wildcard map[string]*hostRoutes
	// any holds the rules without a host, tried after a host's own.
	any *hostRoutes
	// fallback is the default backend of the oldest Ingress that has
	// one; nil answers 404.
	fallback *Route
	// certs maps a TLS host (or wildcard suffix) to its certificate.
	certs         map[string]*tls.Certificate
	wildcardCerts map[string]*tls.Certificate
	// Problems are what the table could not resolve: the routes they
	// touch answer 503.
	Problems []Problem
}

// Problem is something an Ingress names that does not exist or cannot
// be used.
type Problem struct {
	Namespace, Ingress string
	Reason, Message    string
}

// Problem reasons, the reasons of the events recorded for them.
const (
	ReasonServiceNotFound = "ServiceNotFound"
	ReasonPortNotFound    = "ServicePortNotFound"
	ReasonSecretNotFound  = "SecretNotFound"
	ReasonSecretInvalid   = "SecretInvalid"
	ReasonBackendResource = "BackendNotSupported"
)

// hostRoutes are the paths of one host, in match order.
type hostRoutes struct {
	exact  map[string]*Route
	prefix []*Route // longest path first
	// insecure is set when the host is named by a TLS entry whose Secret
	// could not be used: HTTPS requests for it answer 503.
	insecure string
}

// Route is one path of one Ingress to one backend.
type Route struct {
	Namespace, Ingress string
	Host, Path         string
	PathType           networkingv1.PathType
	Backend            *Backend
	// Unavailable is why the route answers 503, empty when it routes.
	Unavailable string
	// created orders conflicting routes: the oldest Ingress wins.
	created int64
	uid     string
	// ref is "namespace/ingress", for the access log.
	ref string
	// series are the route's metrics, set when its table is put in use.
	series *series
}

// Backend is one Service port and the addresses behind it.
type Backend struct {
	// Name is "namespace/service:port", the metrics' backend label.
	Name string
	// Addrs are the ready endpoints as host:port, or the serving
	// terminating ones when none is ready, as the node proxy picks them.
	Addrs []string
}

// Build turns the objects into a routing table. It is a pure function:
// the same objects give the same table.
func Build(objs Objects) *Table {
	b := &builder{
		t: &Table{exact: map[string]*hostRoutes{}, wildcard: map[string]*hostRoutes{},
			certs: map[string]*tls.Certificate{}, wildcardCerts: map[string]*tls.Certificate{}},
		services: map[string]*api.Service{},
		slices:   map[string][]*api.EndpointSlice{},
		secrets:  map[string]*api.Secret{},
		backends: map[string]*Backend{},
	}
	for _, s := range objs.Services {
		b.services[s.Namespace+"/"+s.Name] = s
	}
	for _, es := range objs.EndpointSlices {
		if name := es.Labels[api.LabelServiceName]; name != "" {
			k := es.Namespace + "/" + name
			b.slices[k] = append(b.slices[k], es)
		}
	}
	for _, s := range objs.Secrets {
		b.secrets[s.Namespace+"/"+s.Name] = s
	}
	ings := slices.Clone(objs.Ingresses)
	// Oldest first: an older Ingress's route wins a conflict, as
	// Kubernetes' controllers settle it.
	slices.SortStableFunc(ings, func(a, c *api.Ingress) int {
		if d := a.CreationTimestamp.Compare(c.CreationTimestamp.Time); d != 0 {
			return d
		}
		return strings.Compare(a.Namespace+"/"+a.Name, c.Namespace+"/"+c.Name)
	})
	defaultClass := api.DefaultIngressClassName(objs.Classes)
	for _, ing := range ings {
		if !api.IngressServedBy(ing, api.IngressControllerBerth, objs.Classes, defaultClass) || ing.DeletionTimestamp != nil {
			continue
		}
		b.add(ing)
	}
	for _, h := range b.t.hosts() {
		slices.SortStableFunc(h.prefix, func(a, c *Route) int { return len(c.Path) - len(a.Path) })
	}
	return b.t
}

type builder struct {
	t        *Table
	services map[string]*api.Service
	slices   map[string][]*api.EndpointSlice
	secrets  map[string]*api.Secret
	backends map[string]*Backend
}

func (b *builder) problem(ing *api.Ingress, reason, format string, args ...any) string {
	msg := fmt.Sprintf(format, args...)
	b.t.Problems = append(b.t.Problems, Problem{Namespace: ing.Namespace, Ingress: ing.Name, Reason: reason, Message: msg})
	return msg
}

func (b *builder) add(ing *api.Ingress) {
	created := ing.CreationTimestamp.Unix()
	ref := ing.Namespace + "/" + ing.Name
	if ing.Spec.DefaultBackend != nil && b.t.fallback == nil {
		r := &Route{Namespace: ing.Namespace, Ingress: ing.Name, Path: "/", PathType: networkingv1.PathTypePrefix, created: created, ref: ref}
		r.Backend, r.Unavailable = b.backend(ing, ing.Spec.DefaultBackend)
		b.t.fallback = r
	}
	for _, rule := range ing.Spec.Rules {
		if rule.HTTP == nil {
			continue
		}
		h := b.host(rule.Host)
		for _, p := range rule.HTTP.Paths {
			pt := networkingv1.PathTypeImplementationSpecific
			if p.PathType != nil {
				pt = *p.PathType
			}
			r := &Route{Namespace: ing.Namespace, Ingress: ing.Name, Host: rule.Host, Path: p.Path, PathType: pt, created: created, ref: ref}
			if r.Path == "" {
				r.Path = "/"
			}
			r.Backend, r.Unavailable = b.backend(ing, &p.Backend)
			h.add(r)
		}
	}
	for _, t := range ing.Spec.TLS {
		cert, why := b.cert(ing, t.SecretName)
		for _, host := range t.Hosts {
			host = strings.ToLower(host)
			if cert == nil {
				if why != "" {
					b.host(host).insecure = why
				}
				continue
			}
			if suffix, ok := strings.CutPrefix(host, "*"); ok {
				if _, taken := b.t.wildcardCerts[suffix]; !taken {
					b.t.wildcardCerts[suffix] = cert
				}
			} else if _, taken := b.t.certs[host]; !taken {
				b.t.certs[host] = cert
			}
		}
	}
}

// cert loads a TLS Secret of the Ingress's namespace; an empty name (a
// TLS entry without one) takes the fallback certificate.
func (b *builder) cert(ing *api.Ingress, name string) (*tls.Certificate, string) {
	if name == "" {
		return nil, ""
	}
	s, ok := b.secrets[ing.Namespace+"/"+name]
	if !ok {
		return nil, b.problem(ing, ReasonSecretNotFound, "secret %s/%s not found", ing.Namespace, name)
	}
	cert, err := tls.X509KeyPair(s.Data[api.TLSCertKey], s.Data[api.TLSPrivateKey])
	if err != nil {
		return nil, b.problem(ing, ReasonSecretInvalid, "secret %s/%s: %v", ing.Namespace, name, err)
	}
	return &cert, ""
}

func (b *builder) host(host string) *hostRoutes {
	host = strings.ToLower(host)
	m, key := b.t.exact, host
	switch {
	case host == "":
		if b.t.any == nil {
			b.t.any = &hostRoutes{exact: map[string]*Route{}}
		}
		return b.t.any
	case strings.HasPrefix(host, "*."):
		m, key = b.t.wildcard, host[1:]
	}
	h := m[key]
	if h == nil {
		h = &hostRoutes{exact: map[string]*Route{}}
		m[key] = h
	}
	return h
}

// add puts a route in; a route for a path and type an older Ingress
// already routes is dropped.
func (h *hostRoutes) add(r *Route) {
	if r.PathType == networkingv1.PathTypeExact {
		if _, taken := h.exact[r.Path]; !taken {
			h.exact[r.Path] = r
		}
		return
	}
	r.Path = strings.TrimSuffix(r.Path, "/")
	for _, o := range h.prefix {
		if o.Path == r.Path {
			return
		}
	}
	h.prefix = append(h.prefix, r)
}

// backend resolves an IngressBackend to the Service port's ready
// endpoints; the string says why it cannot be.
func (b *builder) backend(ing *api.Ingress, ib *networkingv1.IngressBackend) (*Backend, string) {
	if ib.Service == nil {
		return nil, b.problem(ing, ReasonBackendResource, "resource backends are not supported by the berth ingress class")
	}
	key := ing.Namespace + "/" + ib.Service.Name
	svc, ok := b.services[key]
	if !ok {
		return nil, b.problem(ing, ReasonServiceNotFound, "service %s not found", key)
	}
	port := ib.Service.Port
	var sp *api.ServicePort
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if (port.Name != "" && p.Name == port.Name) || (port.Name == "" && p.Port == port.Number) {
			sp = p
			break
		}
	}
	portName := port.Name
	if portName == "" {
		portName = strconv.Itoa(int(port.Number))
	}
	name := key + ":" + portName
	if be, ok := b.backends[name]; ok {
		return be, ""
	}
	if svc.Spec.Type == api.ServiceTypeExternalName {
		p := port.Number
		if sp != nil {
			p = sp.Port
		}
		be := &Backend{Name: name, Addrs: []string{net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(p)))}}
		b.backends[name] = be
		return be, ""
	}
	if sp == nil {
		return nil, b.problem(ing, ReasonPortNotFound, "service %s has no port %s", key, portName)
	}
	be := &Backend{Name: name, Addrs: endpoints(b.slices[key], sp)}
	b.backends[name] = be
	return be, ""
}

// endpoints are the addresses of a Service port's ready endpoints, or,
// when none is ready, of its serving terminating ones, as the node
// proxy (and kube-proxy) pick them.
func endpoints(all []*api.EndpointSlice, sp *api.ServicePort) []string {
	var ready, terminating []string
	for _, es := range all {
		if es.AddressType == api.AddressTypeFQDN {
			continue
		}
		var port int32 = -1
		for _, p := range es.Ports {
			pname := ""
			if p.Name != nil {
				pname = *p.Name
			}
			if pname == sp.Name && p.Port != nil {
				port = *p.Port
				break
			}
		}
		if port < 0 {
			continue
		}
		for _, e := range es.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			addr := net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(port)))
			c := e.Conditions
			switch {
			case c.Ready == nil || *c.Ready:
				ready = append(ready, addr)
			case (c.Serving == nil || *c.Serving) && c.Terminating != nil && *c.Terminating:
				terminating = append(terminating, addr)
			}
		}
	}
	if len(ready) == 0 {
		ready = terminating
	}
	slices.Sort(ready)
	return slices.Compact(ready)
}

// Match finds the route of a request's host and path: the host's own
// rules (exact host, then the wildcard one level up), then the rules
// without a host, then the default backend. Within a host an Exact path
// wins, then the longest Prefix whose path elements all match. tlsConn
// says the request came over TLS, for hosts whose Secret is missing.
func (t *Table) Match(host, path string, tlsConn bool) *Route {
	host = strings.ToLower(stripPort(host))
	var hosts []*hostRoutes
	if h := t.exact[host]; h != nil {
		hosts = append(hosts, h)
	}
	if i := strings.IndexByte(host, '.'); i > 0 {
		if h := t.wildcard[host[i:]]; h != nil {
			hosts = append(hosts, h)
		}
	}
	if t.any != nil {
		hosts = append(hosts, t.any)
	}
	for _, h := range hosts {
		if r := h.match(path); r != nil {
			if tlsConn && h.insecure != "" {
				return &Route{Namespace: r.Namespace, Ingress: r.Ingress, Host: r.Host, Path: r.Path, PathType: r.PathType,
					Backend: r.Backend, Unavailable: h.insecure, ref: r.ref, series: r.series}
			}
			return r
		}
	}
	return t.fallback
}

// hosts are the routes of every host, the wildcard ones and those
// without a host.
func (t *Table) hosts() []*hostRoutes {
	out := make([]*hostRoutes, 0, len(t.exact)+len(t.wildcard)+1)
	for _, h := range t.exact {
		out = append(out, h)
	}
	for _, h := range t.wildcard {
		out = append(out, h)
	}
	if t.any != nil {
		out = append(out, t.any)
	}
	return out
}

// eachRoute calls f with every route of the table.
func (t *Table) eachRoute(f func(*Route)) {
	for _, h := range t.hosts() {
		for _, r := range h.exact {
			f(r)
		}
		for _, r := range h.prefix {
			f(r)
		}
	}
	if t.fallback != nil {
		f(t.fallback)
	}
}

func (h *hostRoutes) match(path string) *Route {
	if r := h.exact[path]; r != nil {
		return r
	}
	for _, r := range h.prefix {
		if prefixMatch(r.Path, path) {
			return r
		}
	}
	return nil
}

// prefixMatch is Kubernetes' Prefix match: p (without its trailing
// slash) matches path element by element, so /foo matches /foo and
// /foo/bar but not /foobar.
func prefixMatch(p, path string) bool {
	if p == "" {
		return true
	}
	if !strings.HasPrefix(path, p) {
		return false
	}
	return len(path) == len(p) || path[len(p)] == '/'
}

// Certificate picks the certificate of a TLS server name: the host's
// own, then its wildcard one; nil for the fallback.
func (t *Table) Certificate(serverName string) *tls.Certificate {
	name := strings.ToLower(serverName)
	if c := t.certs[name]; c != nil {
		return c
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		return t.wildcardCerts[name[i:]]
	}
	return nil
}

func stripPort(host string) string {
	// Most Hosts have no port: no split, and no error made to say so.
	if !strings.Contains(host, ":") {
		return host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		return strings.Trim(h, "[]")
	}
	return strings.Trim(host, "[]")
}
