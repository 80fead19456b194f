package apiserver

import (
	"net/http"
	"strings"

	"github.com/berth-dev/berth/apiserver/auth"
)

// Request-header authentication, as kube-apiserver's front proxy does it
// (--requestheader-allowed-names): a control plane that follows another
// passes the writes it receives on to the leader, and the client
// certificate a user authenticated with stays behind on the follower's
// TLS connection. The follower names that user in these headers, on a
// connection where it presents its own client certificate, and the leader
// takes the user from them, so that RBAC judges the user and not the
// follower. The headers are believed only from a client certificate the
// cluster CA signed for Config.ProxyClientName, which only control planes
// hold; from anyone else they are ignored, and a follower removes them
// from every request it passes on before it sets its own.
const (
	HeaderRemoteUser  = "X-Remote-User"
	HeaderRemoteGroup = "X-Remote-Group"
	// prefixRemoteExtra is kube-apiserver's header of a user's extra
	// fields; berth's certificate users have none, but a follower
	// removes what a client sent of them all the same.
	prefixRemoteExtra = "X-Remote-Extra-"
)

// fromProxy reports whether the request came over a connection whose
// client certificate, verified against the cluster CA, names the
// proxy: another control plane passing a request on.
func (s *Server) fromProxy(r *http.Request) bool {
	name := s.cfg.ProxyClientName
	if name == "" || r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.PeerCertificates) == 0 {
		return false
	}
	return r.TLS.PeerCertificates[0].Subject.CommonName == name
}

// proxiedIdentity is the user a proxy named in the request's headers,
// nil when it named none.
func proxiedIdentity(h http.Header) *auth.Identity {
	name := h.Get(HeaderRemoteUser)
	if name == "" {
		return nil
	}
	return auth.UserIdentity(name, h.Values(HeaderRemoteGroup))
}

// PassCertificateUser prepares out, the headers of a request a control
// plane passes on to another (the leader) on behalf of in: every
// request-header a client sent is removed, and a user who authenticated
// to this control plane with a client certificate, and with no bearer
// token, is named in them, so that the other judges that user. The
// certificate is the one the TLS handshake verified against the cluster
// CA. A request with a bearer token keeps it, for the other to check.
func PassCertificateUser(in *http.Request, out http.Header) {
	for k := range out {
		if k == HeaderRemoteUser || k == HeaderRemoteGroup || strings.HasPrefix(k, prefixRemoteExtra) {
			delete(out, k)
		}
	}
	if _, ok := auth.BearerToken(in); ok {
		return
	}
	if in.TLS == nil || len(in.TLS.VerifiedChains) == 0 || len(in.TLS.PeerCertificates) == 0 {
		return
	}
	subject := in.TLS.PeerCertificates[0].Subject
	if subject.CommonName == "" {
		return
	}
	out.Set(HeaderRemoteUser, subject.CommonName)
	for _, g := range subject.Organization {
		out.Add(HeaderRemoteGroup, g)
	}
}
