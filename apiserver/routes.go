package apiserver

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
)

// resourceRequest is a request for a resource, as its path and method name
// it (SPEC §5):
//
//	/api/v1/{resource}[/{name}[/{subresource}]]                       cluster-scoped, or a list across namespaces
//	/api/v1/namespaces/{ns}/{resource}[/{name}[/{subresource}]]       namespaced
//	/apis/{group}/{version}/...                                        the same for named groups
type resourceRequest struct {
	kind *api.Kind
	// version is the version the path names of a custom kind, which may
	// be another than the one its objects are stored in.
	version     string
	namespace   string
	name        string
	subresource string
	verb        string
	id          *auth.Identity
	// applied marks a server-side apply, whose write carries the
	// managedFields the field manager made.
	applied bool
	// proxyDepth is, for the proxy subresource, how many segments of the
	// path lead up to and include "proxy": the rest is the pod's path.
	proxyDepth int
	// header is the answer's header, which admission's warnings go to.
	header http.Header
}

// namespaceSubresources are the subresources of a namespace, which a path
// /api/v1/namespaces/{name}/{x} names instead of a resource {x} in it.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// builtinSubresources are the subresources the server itself serves ("" is
// the object).
var builtinSubresources = map[string]bool{"": true, "status": true, "scale": true, "finalize": true}

// SubresourceHandler serves a subresource other than status, registered
// with HandleSubresource: the pod log proxy, a token request. The server
// has authenticated the caller, found the object (obj) and authorized the
// request (verb get for GET, create for POST) before it is called.
type SubresourceHandler func(w http.ResponseWriter, r *http.Request, obj api.Object)

type subresourceKey struct {
	kind *api.Kind
	name string
}

// HandleSubresource serves /…/{resource}/{name}/{subresource} of a kind
// with h, for GET and POST, and lists it in discovery. It panics for a
// subresource discovery has no entry for (handledSubresources): a
// programming error, like a bad pattern given to http.ServeMux.
func (s *Server) HandleSubresource(k *api.Kind, subresource string, h SubresourceHandler) {
	if _, ok := handledSubresources[subresource]; !ok {
		panic(fmt.Sprintf("apiserver: %s/%s has no discovery entry", k.Resource, subresource))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subresources[subresourceKey{k, subresource}] = h
	s.disc = nil // listed from the next discovery request on
}

// discovery is every discovery document, encoded once for the handlers
// registered so far.
func (s *Server) discovery() (*discoveryDocs, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The custom kinds change with the process's kinds and with this
	// store's CRDs.
	gen := [2]uint64{api.CustomGeneration(), s.store.KindRevision(crdKind)}
	if s.disc != nil && s.discGen == gen {
		return s.disc, nil
	}
	handled := map[*api.Kind][]string{}
	for key := range s.subresources {
		handled[key.kind] = append(handled[key.kind], key.name)
	}
	for _, subs := range handled {
		slices.Sort(subs)
	}
	var custom []*api.Kind
	for _, k := range api.CustomKinds() {
		if s.servesCustom(k) {
			custom = append(custom, k)
		}
	}
	d, err := newDiscoveryDocs(handled, custom)
	if err != nil {
		return nil, err
	}
	s.disc, s.discGen = d, gen
	return d, nil
}

// ServedSubresources are the subresources the router serves, as
// "group/version resource/subresource" ("v1 pods/log" in the core group):
// found by asking the router of each kind's object for every subresource
// it could take, so that what discovery lists can be checked against it.
func (s *Server) ServedSubresources() []string {
	candidates := []string{"status", "scale", "finalize", SubresourceProxy}
	s.mu.Lock()
	for key := range s.subresources {
		candidates = append(candidates, key.name)
	}
	s.mu.Unlock()
	slices.Sort(candidates)
	candidates = slices.Compact(candidates)
	var out []string
	for _, k := range api.Kinds() {
		gv := k.GVK.GroupVersion()
		segs := []string{"apis", gv.Group, gv.Version}
		if gv.Group == "" {
			segs = []string{"api", gv.Version}
		}
		if k.Namespaced {
			segs = append(segs, "namespaces", "default")
		}
		for _, sub := range candidates {
			if _, err := s.parseResourcePath(append(slices.Clip(segs), k.Resource, "x", sub)); err == nil {
				out = append(out, gv.String()+" "+k.Resource+"/"+sub)
			}
		}
	}
	return out
}

func (s *Server) subresourceHandler(k *api.Kind, sub string) SubresourceHandler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subresources[subresourceKey{k, sub}]
}

// splitPath cuts a URL path into its segments, ignoring one trailing
// slash. An empty segment inside the path makes it unroutable (nil).
func splitPath(p string) []string {
	p = strings.TrimPrefix(p, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return nil
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return nil
		}
	}
	return segs
}

// serveAPI serves everything under /api and /apis: discovery, then the
// resources.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	segs := splitPath(r.URL.Path)
	if s.serveDiscovery(w, r, segs) {
		return
	}
	if ns, ok := localReviewNamespace(segs); ok {
		recordOf(r).verb, recordOf(r).resource = auth.VerbCreate, localSubjectAccessReviewKind.Resource
		s.serveLocalSubjectAccessReview(w, r, ns)
		return
	}
	req, err := s.parseResourcePath(segs)
	if err != nil {
		WriteError(w, err)
		return
	}
	req.id, _ = auth.IdentityFromContext(r.Context())
	req.header = w.Header()
	custom := !builtinSubresources[req.subresource]
	if req.verb, err = requestVerb(r, req, custom); err != nil {
		WriteError(w, err)
		return
	}
	rec := recordOf(r)
	rec.verb, rec.resource = req.verb, req.kind.Resource
	if req.subresource != "" {
		rec.resource += "/" + req.subresource
	}
	if req.subresource == SubresourceProxy {
		rec.long = true // a proxied answer may stream, an upgrade last
		s.serveProxy(w, r, req)
		return
	}
	if custom && req.subresource != auth.SubresourceEviction {
		rec.long = true // log streams may last
		s.serveCustomSubresource(w, r, req)
		return
	}
	if req.verb == auth.VerbWatch {
		rec.long = true
		s.serveWatch(w, r, req)
		return
	}
	who := req.id.String()
	if !s.limiter.acquire(who) {
		WriteError(w, tooManyRequests(who, s.cfg.MaxInflightPerIdentity))
		return
	}
	defer s.limiter.release(who)
	seats, class := s.seatsFor(req)
	if !seats.take() {
		WriteError(w, tooManyInflight(class, cap(seats)))
		return
	}
	defer seats.give()
	if b := s.budgetFor(req); b != nil {
		w = &budgetedWriter{ResponseWriter: w, s: s, ctx: r.Context(), budget: b, class: class}
	}
	if custom {
		// An eviction is a write like any other: timed, and counted
		// against its caller's requests in flight.
		s.serveCustomSubresource(w, r, req)
		return
	}
	if req.subresource == "scale" {
		s.serveScale(w, r, req)
		return
	}
	switch req.verb {
	case auth.VerbGet:
		s.serveGet(w, r, req)
	case auth.VerbList:
		s.serveList(w, r, req)
	case auth.VerbCreate:
		s.serveCreate(w, r, req)
	case auth.VerbUpdate:
		s.serveUpdate(w, r, req)
	case auth.VerbPatch:
		s.servePatch(w, r, req)
	case auth.VerbDelete:
		s.serveDelete(w, r, req)
	case auth.VerbDeleteCollection:
		s.serveDeleteCollection(w, r, req)
	}
}

// parseResourcePath finds the kind, namespace, name and subresource a path
// names.
func (s *Server) parseResourcePath(segs []string) (*resourceRequest, error) {
	var group, version string
	var rest []string
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		version, rest = segs[1], segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		group, version, rest = segs[1], segs[2], segs[3:]
	default:
		return nil, notFoundPath()
	}
	req := &resourceRequest{}
	namespaced := false
	if rest[0] == "namespaces" && len(rest) >= 3 && !(len(rest) == 3 && namespaceSubresources[rest[2]]) {
		req.namespace, rest = rest[1], rest[2:]
		namespaced = true
	}
	k := s.resources[group+"/"+version+"/"+rest[0]]
	if k == nil && group != "" {
		if k = customResource(group, version, rest[0]); k != nil && s.servesCustom(k) {
			req.version = version
		} else {
			k = nil
		}
	}
	if k == nil || (namespaced && !k.Namespaced) {
		return nil, notFoundPath()
	}
	if len(rest) > 3 && !(rest[2] == SubresourceProxy && proxyable(k)) {
		// Only a proxy's path goes on below its subresource.
		return nil, notFoundPath()
	}
	req.kind = k
	if len(rest) >= 2 {
		if k.Namespaced && !namespaced {
			// /api/v1/pods/{name}: a namespaced object needs its namespace.
			return nil, notFoundPath()
		}
		req.name = rest[1]
	}
	if len(rest) >= 3 {
		req.subresource = rest[2]
		switch req.subresource {
		case SubresourceProxy:
			if !proxyable(k) || !namespaced {
				return nil, notFoundPath()
			}
			req.proxyDepth = len(segs) - len(rest) + 3
		case "status":
			if !k.HasStatus {
				return nil, notFoundPath()
			}
		case "scale":
			if !scalable(k) {
				return nil, notFoundPath()
			}
		case "finalize":
			if k != namespaceKind {
				return nil, notFoundPath()
			}
		default:
			if s.subresourceHandler(k, req.subresource) == nil {
				return nil, notFoundPath()
			}
		}
	}
	return req, nil
}

// connectSubresources run something on a node rather than read it:
// whatever the method, they are authorized as create.
var connectSubresources = map[string]bool{"exec": true, "attach": true, "portforward": true}

// requestVerb maps the method (and ?watch) to a Kubernetes verb, or
// answers 405 for a method the path does not take.
func requestVerb(r *http.Request, req *resourceRequest, custom bool) (string, error) {
	named := req.name != ""
	if req.subresource == SubresourceProxy {
		return proxyVerb(r, req.kind)
	}
	if custom {
		switch r.Method {
		case http.MethodGet:
			if connectSubresources[req.subresource] {
				// A WebSocket's handshake is a GET, but what it asks
				// for is to run something: Kubernetes authorizes it as
				// create, so that who may read pods may not exec or
				// attach.
				return auth.VerbCreate, nil
			}
			return auth.VerbGet, nil
		case http.MethodPost:
			return auth.VerbCreate, nil
		}
		return "", methodNotAllowed(req.kind, r.Method)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if w := r.URL.Query().Get("watch"); (w == "true" || w == "1") && req.subresource == "" {
			return auth.VerbWatch, nil
		}
		if named {
			return auth.VerbGet, nil
		}
		return auth.VerbList, nil
	case http.MethodPost:
		if !named && req.subresource == "" && (req.namespace != "" || !req.kind.Namespaced) {
			return auth.VerbCreate, nil
		}
	case http.MethodPut:
		if named {
			return auth.VerbUpdate, nil
		}
	case http.MethodPatch:
		if named {
			return auth.VerbPatch, nil
		}
	case http.MethodDelete:
		switch {
		case named && req.subresource == "":
			return auth.VerbDelete, nil
		case !named && req.subresource == "" && (req.namespace != "" || !req.kind.Namespaced) && takesDeleteCollection(req.kind):
			return auth.VerbDeleteCollection, nil
		}
	}
	return "", methodNotAllowed(req.kind, r.Method)
}

// serveCustomSubresource finds and authorizes the object of a registered
// subresource, then hands the request over.
func (s *Server) serveCustomSubresource(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	h := s.subresourceHandler(req.kind, req.subresource)
	obj, ok := s.authorizedObject(w, r, req)
	if !ok {
		return
	}
	if connectSubresources[req.subresource] {
		if err := s.admitConnect(r, req); err != nil {
			WriteError(w, err)
			return
		}
	}
	h(w, r, obj)
}

// authorizedObject is the object a subresource request names, once the
// caller is authorized; false when it has answered the request with an
// error. Authorization comes first, so that who may not use the
// subresource does not learn whether the object exists.
func (s *Server) authorizedObject(w http.ResponseWriter, r *http.Request, req *resourceRequest) (api.Object, bool) {
	obj, err := s.store.Get(req.kind, req.namespace, req.name)
	if err != nil && !isNotFound(err) {
		WriteError(w, err)
		return nil, false
	}
	if err := s.authorize(r, req, nil, obj); err != nil {
		WriteError(w, err)
		return nil, false
	}
	if obj == nil {
		WriteError(w, err)
		return nil, false
	}
	return obj, true
}
