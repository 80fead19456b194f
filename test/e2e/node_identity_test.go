package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNodeCredentialEscalations: a joined node, with the credential its
// agent keeps, tries each way out of its own node's business that Kubernetes'
// Node authorizer and NodeRestriction close, and is refused every one.
func TestNodeCredentialEscalations(t *testing.T) {
	s := startServer(t)
	a := startAgent(t, s, "n1", "127.0.0.51", "--node-taints", "dedicated=db:NoSchedule")
	s.applyText(t, `apiVersion: v1
kind: Secret
metadata: {name: admin-secret, namespace: kube-system}
stringData: {token: do-not-leak}
`)
	cred, err := os.ReadFile(filepath.Join(a.dataDir, "node-credential"))
	if err != nil {
		t.Fatalf("the agent keeps no credential: %v", err)
	}
	joinToken, err := os.ReadFile(filepath.Join(s.dataDir, "node-token"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(s.dataDir, "tls", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	do := func(token, method, path, contentType, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	node := string(cred)
	nodeUID := field(mustJSON(t, s, "node", "n1"), "metadata.uid")

	mirror := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"grab","namespace":"kube-system",
		"annotations":{"berth.dev/mirror":"x"},
		"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"n1","uid":"` + nodeUID.(string) + `","controller":true}]},
		"spec":{"nodeName":"n1","containers":[{"name":"c","image":"busybox","envFrom":[{"secretRef":{"name":"admin-secret"}}]}]}}`
	for _, c := range []struct {
		name, token, method, path, contentType, body string
		want                                         int
	}{
		{"mirror pod naming another namespace's secret", node, "POST", "/api/v1/namespaces/kube-system/pods", "application/json", mirror, 403},
		{"mirror pod running as another service account", node, "POST", "/api/v1/namespaces/kube-system/pods", "application/json",
			strings.Replace(strings.Replace(mirror, `,"envFrom":[{"secretRef":{"name":"admin-secret"}}]`, ``, 1), `"nodeName":"n1",`, `"nodeName":"n1","serviceAccountName":"admin",`, 1), 403},
		{"read a secret no pod of the node uses", node, "GET", "/api/v1/namespaces/kube-system/secrets/admin-secret", "", "", 403},
		{"mint a service account's token", node, "POST", "/api/v1/namespaces/kube-system/serviceaccounts/default/token", "application/json", `{"spec":{}}`, 403},
		{"drop its taints", node, "PATCH", "/api/v1/nodes/n1", "application/merge-patch+json", `{"spec":{"taints":null}}`, 403},
		{"give itself a role", node, "PATCH", "/api/v1/nodes/n1", "application/merge-patch+json", `{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`, 403},
		{"give itself a restricted label", node, "PATCH", "/api/v1/nodes/n1", "application/merge-patch+json", `{"metadata":{"labels":{"node-restriction.kubernetes.io/pci":"true"}}}`, 403},
		{"renew another node's credential", node, "POST", "/berth/v1/join", "application/json", `{"nodeName":"n2"}`, 403},
		{"join the live node again with the join token", string(joinToken), "POST", "/berth/v1/join", "application/json", `{"nodeName":"n1","addresses":["127.0.0.51"]}`, 403},
	} {
		if code, body := do(c.token, c.method, c.path, c.contentType, c.body); code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
		}
	}
	// The node's own business still works with the same credential.
	if code, body := do(node, "GET", "/api/v1/nodes/n1", "", ""); code != 200 {
		t.Errorf("the node reads its Node: %d %s", code, body)
	}

	// The join token gets no serving certificate for the API server's
	// names, and the one it gets for a node's own does not chain to the
	// CA clients trust for the API server.
	if code, body := do(string(joinToken), "POST", "/berth/v1/join", "application/json", `{"nodeName":"n9","addresses":["localhost"]}`); code != http.StatusUnprocessableEntity {
		t.Errorf("serving certificate for localhost: %d %s", code, body)
	}
	code, body := do(string(joinToken), "POST", "/berth/v1/join", "application/json", `{"nodeName":"n9","addresses":["127.0.0.1","n9"]}`)
	if code != 200 {
		t.Fatalf("join n9: %d %s", code, body)
	}
	var jr struct {
		ServingCertificate string `json:"servingCertificate"`
	}
	if err := json.Unmarshal([]byte(body), &jr); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode([]byte(jr.ServingCertificate))
	if block == nil {
		t.Fatalf("no serving certificate in %s", body)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}); err == nil {
		t.Error("a node's serving certificate passes for the API server with the cluster CA")
	}
	if !bytes.Contains([]byte(cert.Subject.CommonName), []byte("system:node:n9")) {
		t.Errorf("serving certificate CN %q", cert.Subject.CommonName)
	}
}

func mustJSON(t *testing.T, s *server, args ...string) map[string]any {
	t.Helper()
	obj, err := s.getJSON(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}
