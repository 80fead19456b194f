package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"errors"
	"strings"
)

// Paths of the service-account issuer discovery documents, as Kubernetes
// serves them, so OIDC libraries find the key that verifies berth's tokens.
const (
	JWKSPath          = "/openid/v1/jwks"
	OIDCDiscoveryPath = "/.well-known/openid-configuration"
)

// JSONWebKey is one public key in a JWKS document (RFC 7517).
type JSONWebKey struct {
	Use string `json:"use,omitempty"`
	Kty string `json:"kty"`
	Kid string `json:"kid,omitempty"`
	Crv string `json:"crv"`
	Alg string `json:"alg,omitempty"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// JSONWebKeySet is the document served at JWKSPath.
type JSONWebKeySet struct {
	Keys []JSONWebKey `json:"keys"`
}

func newJSONWebKey(pub *ecdsa.PublicKey, kid string) (JSONWebKey, error) {
	raw, err := pub.Bytes()
	if err != nil {
		return JSONWebKey{}, err
	}
	// Uncompressed point: 0x04 || X || Y, each 32 bytes for P-256.
	if len(raw) != 65 || raw[0] != 4 {
		return JSONWebKey{}, errors.New("service-account signing key: not a P-256 point")
	}
	enc := base64.RawURLEncoding
	return JSONWebKey{
		Use: "sig",
		Kty: "EC",
		Kid: kid,
		Crv: "P-256",
		Alg: "ES256",
		X:   enc.EncodeToString(raw[1:33]),
		Y:   enc.EncodeToString(raw[33:]),
	}, nil
}

// PublicKey rebuilds the ECDSA key a JWK describes, so that a verifier
// that has only the JWKS document can check tokens.
func (k JSONWebKey) PublicKey() (*ecdsa.PublicKey, error) {
	if k.Kty != "EC" || k.Crv != "P-256" {
		return nil, errors.New("jwk: want an EC P-256 key")
	}
	x, err := base64.RawURLEncoding.DecodeString(k.X)
	if err != nil || len(x) != 32 {
		return nil, errors.New("jwk: bad x coordinate")
	}
	y, err := base64.RawURLEncoding.DecodeString(k.Y)
	if err != nil || len(y) != 32 {
		return nil, errors.New("jwk: bad y coordinate")
	}
	point := append(append([]byte{4}, x...), y...)
	return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
}

// JWKS is the key set that verifies the signer's tokens.
func (s *Signer) JWKS() JSONWebKeySet {
	k, err := newJSONWebKey(&s.key.PublicKey, s.kid)
	if err != nil {
		// NewSigner accepted only P-256 keys, whose encoding cannot fail.
		panic(err)
	}
	return JSONWebKeySet{Keys: []JSONWebKey{k}}
}

// OIDCDiscovery is the OpenID provider configuration served at
// OIDCDiscoveryPath; it names the issuer and where its keys are.
type OIDCDiscovery struct {
	Issuer            string   `json:"issuer"`
	JWKSURI           string   `json:"jwks_uri"`
	ResponseTypes     []string `json:"response_types_supported"`
	SubjectTypes      []string `json:"subject_types_supported"`
	SigningAlgorithms []string `json:"id_token_signing_alg_values_supported"`
}

// Discovery is the signer's OpenID provider configuration.
func (s *Signer) Discovery() OIDCDiscovery {
	return OIDCDiscovery{
		Issuer:            s.Issuer,
		JWKSURI:           strings.TrimSuffix(s.Issuer, "/") + JWKSPath,
		ResponseTypes:     []string{"id_token"},
		SubjectTypes:      []string{"public"},
		SigningAlgorithms: []string{"ES256"},
	}
}
