package client_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

func TestLoadKubeconfig(t *testing.T) {
	dir := t.TempDir()
	ca := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte(ca), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inline := write("inline", `apiVersion: v1
kind: Config
current-context: berth
clusters:
- name: other
  cluster: {server: "https://other:6443"}
- name: berth
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: `+base64.StdEncoding.EncodeToString([]byte(ca))+`
contexts:
- name: berth
  context: {cluster: berth, user: admin, namespace: team}
users:
- name: admin
  user: {token: secret}
`)
	cfg, err := client.LoadKubeconfig(inline)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server != "https://127.0.0.1:6443" || cfg.Token != "secret" || string(cfg.CAData) != ca || cfg.Namespace != "team" {
		t.Fatalf("inline kubeconfig: %+v", cfg)
	}
	files := write("files", `current-context: c
clusters: [{name: k, cluster: {server: "https://h:1", certificate-authority: ca.crt}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {tokenFile: token}}]
`)
	cfg, err = client.LoadKubeconfig(files)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Token != "file-token" || string(cfg.CAData) != ca {
		t.Fatalf("file kubeconfig: %+v", cfg)
	}
	// A user of `berth token create-user`: a client certificate and its
	// key, here as files relative to the kubeconfig.
	for name, body := range map[string]string{"user.crt": "cert-pem", "user.key": "key-pem"} {
		write(name, body)
	}
	cert := write("cert", `current-context: c
clusters: [{name: k, cluster: {server: "https://h:1", certificate-authority: ca.crt}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {client-certificate: user.crt, client-key: user.key}}]
`)
	cfg, err = client.LoadKubeconfig(cert)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Token != "" || string(cfg.CertData) != "cert-pem" || string(cfg.KeyData) != "key-pem" {
		t.Fatalf("client-certificate kubeconfig: %+v", cfg)
	}
	for name, body := range map[string]string{
		"plugin user": `{current-context: c, clusters: [{name: k, cluster: {server: "https://h:1"}}],
  contexts: [{name: c, context: {cluster: k, user: u}}],
  users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: login, interactiveMode: Never}}}]}`,
		"no context":      `clusters: []`,
		"missing cluster": `{current-context: c, contexts: [{name: c, context: {cluster: k, user: u}}]}`,
		"bad yaml":        `: : :`,
	} {
		if _, err := client.LoadKubeconfig(write("bad", body)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := client.LoadKubeconfig(filepath.Join(dir, "absent")); err == nil {
		t.Error("missing file: no error")
	}
}

func TestClientVerbsAndErrors(t *testing.T) {
	s := newServer(t, 0, nil)
	c := s.client(t)
	ctx := context.Background()

	// Create without a namespace lands in default.
	out, err := c.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"tier": "web"}}})
	if err != nil || out.GetNamespace() != "default" {
		t.Fatalf("create: %v %+v", err, out)
	}
	for i := range 5 {
		if _, err := c.Create(ctx, configMap("n"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	var seen int
	rv, err := c.ListEach(ctx, cmKind, "default", client.ListOptions{}, func(api.Object) error { seen++; return nil })
	if err != nil || seen != 6 || rv == "" {
		t.Fatalf("list each: %d %q %v", seen, rv, err)
	}
	items, _, err := c.List(ctx, cmKind, "", client.ListOptions{LabelSelector: "tier=web"})
	if err != nil || len(items) != 1 || items[0].GetName() != "a" {
		t.Fatalf("label list: %v %v", err, items)
	}
	items, _, err = c.List(ctx, cmKind, "default", client.ListOptions{FieldSelector: "metadata.name=n3"})
	if err != nil || len(items) != 1 {
		t.Fatalf("field list: %v %v", err, items)
	}
	stop := errors.New("enough")
	if _, err := c.ListEach(ctx, cmKind, "default", client.ListOptions{}, func(api.Object) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("list each stopping: %v", err)
	}

	_, err = c.Get(ctx, cmKind, "default", "missing")
	var se *apierrors.StatusError
	if !errors.As(err, &se) || !client.IsNotFound(err) || se.ErrStatus.Reason != metav1.StatusReasonNotFound || !strings.Contains(err.Error(), `"missing" not found`) {
		t.Fatalf("not found: %v", err)
	}
	_, err = c.Create(ctx, &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bad"}})
	if !client.IsInvalid(err) || !strings.Contains(err.Error(), "spec.containers") {
		t.Fatalf("invalid: %v", err)
	}
	if _, err := c.Create(ctx, configMap("a")); !client.IsAlreadyExists(err) || client.IsConflict(err) {
		t.Fatalf("already exists: %v", err)
	}
	bad, err := client.New(&client.Config{Server: s.ts.URL, Token: "wrong", CAData: s.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Get(ctx, cmKind, "default", "a"); !client.IsUnauthorized(err) {
		t.Fatalf("bad token: %v", err)
	}

	// Do reaches paths the typed calls do not wrap.
	resp, err := c.Do(ctx, http.MethodGet, "/version", nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "gitVersion") {
		t.Fatalf("version: %s", body)
	}
	if _, err := c.Do(ctx, http.MethodGet, "/api/v1/nope", nil, nil, ""); !client.IsNotFound(err) {
		t.Fatalf("do 404: %v", err)
	}

	// Delete answers the object as it last stood.
	gone, err := c.Delete(ctx, cmKind, "default", "a", nil)
	if err != nil || gone.GetName() != "a" {
		t.Fatalf("delete: %v %+v", err, gone)
	}

	if _, err := client.New(&client.Config{Server: "ftp://x"}); err == nil {
		t.Fatal("ftp server accepted")
	}
	if _, err := client.New(&client.Config{Server: "https://x", CAData: []byte("not pem")}); err == nil {
		t.Fatal("bad CA accepted")
	}
}

func TestResourcePath(t *testing.T) {
	for _, tc := range []struct {
		res, ns, name, sub, want string
	}{
		{"pods", "default", "", "", "/api/v1/namespaces/default/pods"},
		{"pods", "", "", "", "/api/v1/pods"},
		{"pods", "default", "web", "status", "/api/v1/namespaces/default/pods/web/status"},
		{"nodes", "ignored", "n1", "", "/api/v1/nodes/n1"},
		{"deployments", "team", "web", "", "/apis/apps/v1/namespaces/team/deployments/web"},
		{"sources", "", "fleet", "", "/apis/berth.dev/v1/sources/fleet"},
	} {
		if got := client.ResourcePath(kind(tc.res), tc.ns, tc.name, tc.sub); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.res, got, tc.want)
		}
	}
}
