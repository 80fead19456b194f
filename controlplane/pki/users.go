package pki

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/validation/path"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/berth-dev/berth/api"
)

// MaxUserCertLifetime bounds a user certificate: a client certificate
// cannot be revoked before it expires (delete the user's bindings
// instead), so it is issued for a year at most.
const MaxUserCertLifetime = 365 * 24 * time.Hour

// UserKubeconfig signs a client certificate for a user with the data
// dir's cluster CA (common name the user, organizations its groups, as
// Kubernetes reads them) and returns a kubeconfig that uses it against
// the server of the data dir's admin.kubeconfig. RBAC decides what the
// user may do; the group system:masters makes an admin.
func UserKubeconfig(dataDir, name string, groups []string, ttl time.Duration, now time.Time) (*clientcmdapi.Config, error) {
	if name == "" {
		return nil, errors.New("create-user: a user name is needed")
	}
	for _, msg := range path.IsValidPathSegmentName(name) {
		return nil, fmt.Errorf("create-user: user name %q: %s", name, msg)
	}
	if name == api.APIServerClientName {
		// The control planes' own name: a certificate for it may name
		// any user to another control plane.
		return nil, fmt.Errorf("create-user: user name %q is the control planes' own", name)
	}
	if ttl <= 0 || ttl > MaxUserCertLifetime {
		return nil, fmt.Errorf("create-user: --ttl %s: want more than 0 and at most %s", ttl, MaxUserCertLifetime)
	}
	paths := PathsIn(dataDir)
	caPEM, err := os.ReadFile(paths.CACert)
	if err != nil {
		return nil, fmt.Errorf("create-user: the cluster CA: %w", err)
	}
	ca, err := parseCertPEM(caPEM)
	if err != nil {
		return nil, fmt.Errorf("create-user: %s: %w", paths.CACert, err)
	}
	caKey, err := loadPrivateKey(paths.CAKey)
	if err != nil {
		return nil, fmt.Errorf("create-user: the cluster CA's key: %w", err)
	}
	admin, err := ReadKubeconfig(paths.AdminKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("create-user: %w", err)
	}
	cluster, _, err := KubeconfigCurrent(admin)
	if err != nil {
		return nil, fmt.Errorf("create-user: %s: %w", paths.AdminKubeconfig, err)
	}
	key, err := newECKey()
	if err != nil {
		return nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(ttl)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: groups},
		NotBefore:    now.Add(-certBackdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("create-user: sign: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	k := clientcmdapi.NewConfig()
	k.Clusters[KubeconfigName] = &clientcmdapi.Cluster{Server: cluster.Server, CertificateAuthorityData: caPEM, Extensions: cluster.Extensions}
	k.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der}),
		ClientKeyData:         pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: keyDER}),
	}
	k.CurrentContext = name + "@" + KubeconfigName
	k.Contexts[k.CurrentContext] = &clientcmdapi.Context{Cluster: KubeconfigName, AuthInfo: name}
	return k, nil
}
