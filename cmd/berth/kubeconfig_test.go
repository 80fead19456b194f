package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadKubeconfigList reads $KUBECONFIG's list as kubectl does: the
// files merged, the first to set a value winning, a missing file skipped,
// paths in a file relative to that file.
func TestLoadKubeconfigList(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The first file only picks the context; the second holds it, and a
	// token file beside it.
	first := write("a/config", "apiVersion: v1\nkind: Config\ncurrent-context: berth\n")
	write("b/token", "s3cret\n")
	second := write("b/config", `apiVersion: v1
kind: Config
current-context: other
clusters:
- name: berth
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    tokenFile: token
contexts:
- name: berth
  context: {cluster: berth, user: admin, namespace: team}
- name: other
  context: {cluster: nowhere, user: nobody}
`)
	missing := filepath.Join(dir, "missing")
	t.Setenv(envKubeconfig, "")
	t.Setenv(envKubectlConfig, strings.Join([]string{missing, first, second}, string(os.PathListSeparator)))
	g := &globalOptions{}
	choice := g.kubeconfigFiles()
	if choice.explicit || len(choice.files) != 3 {
		t.Fatalf("choice %+v", choice)
	}
	cfg, err := loadKubeconfig(choice)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server != "https://127.0.0.1:6443" || cfg.Token != "s3cret" || !cfg.InsecureSkipTLSVerify || cfg.Namespace != "team" {
		t.Errorf("config %+v", cfg)
	}

	// A named file that does not exist is an error that names it.
	g.kubeconfig = missing
	if _, err := loadKubeconfig(g.kubeconfigFiles()); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing --kubeconfig: %v", err)
	}
	// A user with a client certificate is the certificate and its key,
	// from the file's data or from files it names.
	g.kubeconfig = write("cert/config", `apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {client-certificate-data: Y2VydA==, client-key-data: a2V5}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
`)
	if cfg, err := loadKubeconfig(g.kubeconfigFiles()); err != nil || string(cfg.CertData) != "cert" || string(cfg.KeyData) != "key" || cfg.Token != "" {
		t.Errorf("client certificate data: %v %+v", err, cfg)
	}
	write("certfiles/tls.crt", "cert from a file")
	write("certfiles/tls.key", "key from a file")
	g.kubeconfig = write("certfiles/config", `apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {client-certificate: tls.crt, client-key: tls.key}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
`)
	if cfg, err := loadKubeconfig(g.kubeconfigFiles()); err != nil || string(cfg.CertData) != "cert from a file" || string(cfg.KeyData) != "key from a file" {
		t.Errorf("client certificate files: %v %+v", err, cfg)
	}
	// A user of a plugin only is refused, not sent unnamed.
	g.kubeconfig = write("exec/config", `apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: credential-helper}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
`)
	if _, err := loadKubeconfig(g.kubeconfigFiles()); err == nil || !strings.Contains(err.Error(), "plugin") {
		t.Errorf("exec plugin: %v", err)
	}
}
