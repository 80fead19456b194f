package agent

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/internal/atomicfile"
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
// A credential bound to no Node yet (the first join's, issued before the
// agent registered its Node) is renewed at once, for one bound to the
// Node. ok is false when neither says when it expires.
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
	var claims nodeClaims
	if _, _, err := jwt.NewParser().ParseUnverified(joined.Token, &claims); err == nil && claims.IssuedAt != nil && claims.ExpiresAt != nil {
		consider(claims.IssuedAt.Time, claims.ExpiresAt.Time)
		if claims.Node != nil && claims.Node.UID == "" {
			t, ok = claims.IssuedAt.Time, true
		}
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

// nodeClaims are the claims of a node credential the agent reads (it
// cannot verify them: the server does): its times and the Node it is
// bound to.
type nodeClaims struct {
	jwt.RegisteredClaims
	Node *struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"berth.dev/node,omitempty"`
}

// credentialFile keeps the node credential in the data dir, so that the
// agent, restarted, renews it with itself: the join token does not join a
// node that is still live.
const credentialFile = "node-credential"

// loadCredential reads the node credential the agent kept, "" when it
// has none. Whether it is still good is the server's to say.
func loadCredential(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, credentialFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("node credential: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// saveCredential keeps the node credential in the data dir, readable by
// root alone.
func saveCredential(dataDir, tok string) error {
	if err := atomicfile.WriteFile(filepath.Join(dataDir, credentialFile), []byte(tok+"\n"), 0o600); err != nil {
		return fmt.Errorf("node credential: %w", err)
	}
	return nil
}
