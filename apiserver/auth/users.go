package auth

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Users other than the admin, nodes and service accounts come from client
// certificates signed by the cluster CA (the common name is the user, the
// organizations its groups, as in Kubernetes) and from a static token
// file in kube-apiserver's --token-auth-file format. RBAC decides what
// they may do; system:masters among the groups makes an admin.

// CertificateIdentity is the user of a client certificate the TLS
// handshake verified against the cluster CA; nil when the request brought
// none.
func CertificateIdentity(r *http.Request) (*Identity, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.PeerCertificates) == 0 {
		return nil, nil
	}
	return certUser(r.TLS.PeerCertificates[0])
}

func certUser(cert *x509.Certificate) (*Identity, error) {
	name := cert.Subject.CommonName
	if name == "" {
		return nil, fmt.Errorf("%w: the client certificate has no common name", ErrUnauthenticated)
	}
	return UserIdentity(name, cert.Subject.Organization), nil
}

// StaticTokens are the users of a token file: a token's digest to its
// identity.
type StaticTokens map[[sha256.Size]byte]*Identity

// ReadTokenFile reads kube-apiserver's static token file: one user a
// line, `token,user,uid,"group1,group2"` (the groups optional), lines
// starting with # ignored. An error names the line.
func ReadTokenFile(name string, r io.Reader) (StaticTokens, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	out := StaticTokens{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			// A csv.ParseError names its line.
			return nil, fmt.Errorf("token file %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) < 3 {
			return nil, fmt.Errorf("token file %s: line %d: want token,user,uid[,\"groups\"], got %d fields", name, line, len(rec))
		}
		token, user := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if token == "" || user == "" {
			return nil, fmt.Errorf("token file %s: line %d: an empty token or user name", name, line)
		}
		var groups []string
		if len(rec) > 3 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					groups = append(groups, g)
				}
			}
		}
		digest := sha256.Sum256([]byte(token))
		if _, dup := out[digest]; dup {
			return nil, fmt.Errorf("token file %s: line %d: a token given twice", name, line)
		}
		out[digest] = UserIdentity(user, groups)
	}
}
