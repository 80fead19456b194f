package agent

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/berth-dev/berth/api"
)

// errRenew ends a connected run so that the next one starts with the
// credentials of the renewal join.
var errRenew = errors.New("the node credential and serving certificate are due for renewal")

// renewFraction is how far into their life the node credential and the
// serving certificate are renewed, give or take renewJitter: the kubelet
// rotates its certificates at 70–90% of their life, so that a server that
// is down for a while, or a clock that drifts, still leaves time.
const (
	renewFraction = 0.8
	renewJitter   = 0.05
	// minRenewWait keeps a credential issued already past its renewal
	// point (a clock set wrong) from making the agent join in a loop.
	minRenewWait = time.Minute
	// renewRetry is how long the agent waits after a renewal join the
	// server refused.
	renewRetry = 10 * time.Minute
)

// renewalTime is when the credentials of a join should be renewed: the
// earlier of the node credential's and the serving certificate's renewal
// points, each at renewFraction of its life (jittered by r, in [-1, 1)).
// ok is false when neither says when it expires.
func renewalTime(joined api.JoinResponse, r float64) (t time.Time, ok bool) {
	consider := func(from, to time.Time) {
		if from.IsZero() || !to.After(from) {
			return
		}
		life := to.Sub(from)
		at := from.Add(time.Duration(float64(life) * (renewFraction + renewJitter*r)))
		if !ok || at.Before(t) {
			t, ok = at, true
		}
	}
	var claims jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(joined.Token, &claims); err == nil && claims.IssuedAt != nil && claims.ExpiresAt != nil {
		consider(claims.IssuedAt.Time, claims.ExpiresAt.Time)
	}
	if block, _ := pem.Decode([]byte(joined.ServingCertificate)); block != nil {
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
			consider(cert.NotBefore, cert.NotAfter)
		}
	}
	return t, ok
}

// jitter is a random number in [-1, 1) for renewalTime.
func jitter() float64 { return 2*rand.Float64() - 1 }

// servingCert is the container server's certificate, replaced at each join while
// the server keeps running.
type servingCert struct {
	cur atomic.Pointer[tls.Certificate]
}

// set installs the certificate and key (PEM) of a join.
func (s *servingCert) set(certPEM, keyPEM string) error {
	c, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		return err
	}
	s.cur.Store(&c)
	return nil
}

// get is the container server's tls.Config.GetCertificate.
func (s *servingCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.cur.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("no serving certificate: the agent has not joined, or the server issued none")
}
