package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// servingCert writes a self-signed serving certificate for dnsNames and
// its key to dir, and returns the certificate's PEM: the webhook's
// caBundle.
func servingCert(t *testing.T, dir string, dnsNames ...string) (certFile, keyFile string, certPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: dnsNames[0]},
		DNSNames:              dnsNames,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, certPEM
}

// TestValidatingWebhookInAPod: a validating webhook served by a pod
// (berth toolbox webhook, behind a Service) refuses the objects it is
// written to refuse, through the configuration's clientConfig.service,
// which the API server resolves to the pod's endpoint; the others pass.
func TestValidatingWebhookInAPod(t *testing.T) {
	testtool.Need(t, "kubectl")
	s := startServer(t)
	// Under the exec runtime the pod serves on its node's address.
	const nodeIP = "127.0.0.97"
	startAgent(t, s, "n1", nodeIP)
	certFile, keyFile, ca := servingCert(t, t.TempDir(), "deny-label.default.svc")
	port := freePort(t, nodeIP)
	s.applyText(t, deploymentYAML("deny-label", 1, fmt.Sprintf(`      terminationGracePeriodSeconds: 5
      containers:
      - name: webhook
        image: berth
        command: [%[1]q, toolbox, webhook, --listen, "$(POD_IP):%[2]d", --cert, %[3]q, --key, %[4]q,
          --deny-label, policy.example.com/deny=true]
        env:
        - name: POD_IP
          valueFrom: {fieldRef: {fieldPath: status.podIP}}
        ports:
        - {name: https, containerPort: %[2]d}
        readinessProbe:
          tcpSocket: {port: https}
          periodSeconds: 1
`, bin, port, certFile, keyFile))+`
---
apiVersion: v1
kind: Service
metadata:
  name: deny-label
spec:
  selector: {app: deny-label}
  ports:
  - {name: https, port: 443, targetPort: https}
`)
	waitFor(t, 60*time.Second, "the webhook's pod Ready", func() error {
		pods, err := readyPods(t, s, "deny-label")
		if err != nil || len(pods) != 1 {
			return fmt.Errorf("%v: %v", err, pods)
		}
		return nil
	})

	s.applyText(t, fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: deny-label
webhooks:
- name: deny-label.example.com
  clientConfig:
    service: {namespace: default, name: deny-label, port: 443, path: /validate}
    caBundle: %s
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  objectSelector:
    matchExpressions: [{key: policy.example.com/deny, operator: Exists}]
  failurePolicy: Fail
  sideEffects: None
  timeoutSeconds: 5
  admissionReviewVersions: [v1]
`, base64.StdEncoding.EncodeToString(ca)))

	configMap := func(name, deny string) string {
		path := filepath.Join(t.TempDir(), name+".yaml")
		manifest := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  labels: {policy.example.com/deny: %q}\ndata: {a: b}\n", name, deny)
		if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// The webhook is asked, and lets an object labelled otherwise pass.
	waitFor(t, 30*time.Second, "a ConfigMap the webhook allows", func() error {
		out, err := s.kubectlErr(t, "create", "-f", configMap("allowed", "false"))
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	out, err := s.kubectlErr(t, "create", "-f", configMap("refused", "true"))
	if err == nil || !containsAll(out, `admission webhook "deny-label.example.com" denied the request`,
		`ConfigMap "refused" is labelled policy.example.com/deny=true, which this webhook refuses`) {
		t.Fatalf("kubectl create of a labelled ConfigMap: %v\n%s", err, out)
	}
	if out, err := s.kubectlErr(t, "get", "configmap", "refused"); err == nil || !strings.Contains(out, "NotFound") {
		t.Fatalf("the refused ConfigMap was stored: %v %s", err, out)
	}
	// An update that adds the label is refused too.
	if out, err := s.kubectlErr(t, "label", "--overwrite", "configmap", "allowed", "policy.example.com/deny=true"); err == nil ||
		!strings.Contains(out, "denied the request") {
		t.Fatalf("kubectl label: %v\n%s", err, out)
	}
}
