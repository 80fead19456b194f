package pki_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane/pki"
)

// kubeconfigTestFile is the shape of a kubeconfig as kubectl documents it,
// declared here apart from the package's own types so that a mistake in
// those cannot hide itself.
type kubeconfigTestFile struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Clusters   []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server                   string `json:"server"`
			CertificateAuthorityData string `json:"certificate-authority-data"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			Token string `json:"token"`
		} `json:"user"`
	} `json:"users"`
	Contexts []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
	CurrentContext string `json:"current-context"`
}

func (k *kubeconfigTestFile) check(t *testing.T, server string, caPEM []byte, token string) {
	t.Helper()
	if k.APIVersion != "v1" || k.Kind != "Config" || k.CurrentContext != "berth" {
		t.Errorf("header %q %q current-context %q", k.APIVersion, k.Kind, k.CurrentContext)
	}
	if len(k.Clusters) != 1 || len(k.Users) != 1 || len(k.Contexts) != 1 {
		t.Fatalf("clusters %d users %d contexts %d", len(k.Clusters), len(k.Users), len(k.Contexts))
	}
	ca, err := base64.StdEncoding.DecodeString(k.Clusters[0].Cluster.CertificateAuthorityData)
	if err != nil || !bytes.Equal(ca, caPEM) {
		t.Errorf("certificate-authority-data does not hold the CA: %v", err)
	}
	if k.Clusters[0].Cluster.Server != server || k.Users[0].User.Token != token {
		t.Errorf("server %q token %q", k.Clusters[0].Cluster.Server, k.Users[0].User.Token)
	}
	ctx := k.Contexts[0]
	if ctx.Name != "berth" || ctx.Context.Cluster != k.Clusters[0].Name || ctx.Context.User != k.Users[0].Name {
		t.Errorf("context %+v", ctx)
	}
}

func TestKubeconfigAdminFile(t *testing.T) {
	opts, _ := pkiTestOptions()
	c := pkiTestEnsure(t, t.TempDir(), opts)
	data, err := os.ReadFile(c.Paths.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var k kubeconfigTestFile
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		// Strict only about fields this struct lacks: preferences.
		if err := yaml.Unmarshal(data, &k); err != nil {
			t.Fatal(err)
		}
	}
	k.check(t, "https://10.1.2.3:6443", c.CAPEM, c.AdminToken)

	read, err := pki.ReadKubeconfig(c.Paths.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cluster, user, err := pki.KubeconfigCurrent(read)
	if err != nil {
		t.Fatal(err)
	}
	if cluster.Server != c.ServerURL || !bytes.Equal(cluster.CertificateAuthorityData, c.CAPEM) || user.Token != c.AdminToken {
		t.Errorf("Current() = %+v %+v", cluster, user)
	}
}

func TestKubeconfigRewrittenOnlyWhenChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent", "kubeconfig")
	if err := pki.WriteKubeconfig(path, "https://a:6443", []byte("CA"), "t1"); err != nil {
		t.Fatal(err)
	}
	if got := pkiTestMode(t, path); got != 0o600 {
		t.Errorf("mode %v", got)
	}
	if got := pkiTestMode(t, filepath.Dir(path)); got != 0o700 {
		t.Errorf("dir mode %v", got)
	}
	st1, _ := os.Stat(path)
	if err := pki.WriteKubeconfig(path, "https://a:6443", []byte("CA"), "t1"); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(path)
	if !os.SameFile(st1, st2) {
		t.Error("same content rewritten")
	}
	if err := pki.WriteKubeconfig(path, "https://b:6443", []byte("CA"), "t2"); err != nil {
		t.Fatal(err)
	}
	k, err := pki.ReadKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cl, u, err := pki.KubeconfigCurrent(k); err != nil || cl.Server != "https://b:6443" || u.Token != "t2" {
		t.Errorf("after change: %+v %+v", cl, u)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the kubeconfig", len(entries))
	}
}

func TestKubeconfigWithoutCA(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := pki.WriteKubeconfig(path, "https://a:6443", nil, "t"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte("certificate-authority-data")) {
		t.Errorf("empty CA written:\n%s", data)
	}
}

func TestKubeconfigCurrentErrors(t *testing.T) {
	k := pki.NewKubeconfig("https://a", nil, "t")
	k.CurrentContext = "other"
	if _, _, err := pki.KubeconfigCurrent(k); err == nil {
		t.Error("missing context accepted")
	}
	k = pki.NewKubeconfig("https://a", nil, "t")
	clear(k.AuthInfos)
	if _, _, err := pki.KubeconfigCurrent(k); err == nil {
		t.Error("missing user accepted")
	}
}

// kubeconfigTestKubectl returns kubectl's path, or skips the test when it
// is not installed (fails instead under BERTH_REQUIRE_TOOLS=1).
func kubeconfigTestKubectl(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("BERTH_REQUIRE_TOOLS") == "1" {
			t.Fatal("kubectl not found and BERTH_REQUIRE_TOOLS=1")
		}
		t.Skip("kubectl not installed")
	}
	return path
}

// TestKubeconfigKubectlReadsIt has kubectl parse the admin kubeconfig.
func TestKubeconfigKubectlReadsIt(t *testing.T) {
	kubectl := kubeconfigTestKubectl(t)
	opts, _ := pkiTestOptions()
	c := pkiTestEnsure(t, t.TempDir(), opts)
	cmd := exec.Command(kubectl, "config", "view", "--kubeconfig", c.Paths.AdminKubeconfig, "--raw", "-o", "json")
	cmd.Env = append(os.Environ(), "KUBECONFIG=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl config view: %v\n%s", err, out)
	}
	var k kubeconfigTestFile
	if err := json.Unmarshal(out, &k); err != nil {
		t.Fatalf("kubectl output: %v\n%s", err, out)
	}
	k.check(t, c.ServerURL, c.CAPEM, c.AdminToken)
}

// TestKubeconfigKubectlConnects has kubectl call a TLS server that uses the
// serving certificate, through a kubeconfig written by WriteKubeconfig: it
// must trust the CA and send the token.
func TestKubeconfigKubectlConnects(t *testing.T) {
	kubectl := kubeconfigTestKubectl(t)
	opts, _ := pkiTestOptions()
	c := pkiTestEnsure(t, t.TempDir(), opts)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+c.AdminToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"hello":"berth"}`)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{c.ServingCert}}
	srv.StartTLS()
	defer srv.Close()

	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := pki.WriteKubeconfig(path, srv.URL, c.CAPEM, c.AdminToken); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", path, "--request-timeout", "20s", "get", "--raw", "/berth-test")
	cmd.Env = append(os.Environ(), "KUBECONFIG=", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || string(bytes.TrimSpace(out)) != `{"hello":"berth"}` {
		t.Fatalf("kubectl get --raw: %v\n%s", err, out)
	}
}

// TestKubeconfigServersKubectlAndBerth: an admin.kubeconfig naming a
// load balancer and listing this server for berth (the ServersExtension)
// is one kubectl reads, keeping the one URL and the extension, and berth's
// client reads as the balancer then the server.
func TestKubeconfigServersKubectlAndBerth(t *testing.T) {
	opts, _ := pkiTestOptions()
	opts.ServerURL = "https://berth.example.com:6443"
	opts.Servers = []string{"https://10.1.2.3:6443"}
	c := pkiTestEnsure(t, t.TempDir(), opts)
	cfg, err := client.LoadKubeconfig(c.Paths.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://berth.example.com:6443,https://10.1.2.3:6443"; cfg.Server != want {
		t.Errorf("berth's servers %q, want %q", cfg.Server, want)
	}

	kubectl := kubeconfigTestKubectl(t)
	cmd := exec.Command(kubectl, "config", "view", "--kubeconfig", c.Paths.AdminKubeconfig, "--raw", "-o", "json")
	cmd.Env = append(os.Environ(), "KUBECONFIG=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl config view: %v\n%s", err, out)
	}
	var k struct {
		Clusters []struct {
			Cluster struct {
				Server     string `json:"server"`
				Extensions []struct {
					Name      string         `json:"name"`
					Extension map[string]any `json:"extension"`
				} `json:"extensions"`
			} `json:"cluster"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal(out, &k); err != nil {
		t.Fatalf("kubectl output: %v\n%s", err, out)
	}
	if len(k.Clusters) != 1 || k.Clusters[0].Cluster.Server != opts.ServerURL {
		t.Fatalf("kubectl reads the clusters %s", out)
	}
	ext := k.Clusters[0].Cluster.Extensions
	if len(ext) != 1 || ext[0].Name != client.ServersExtension || fmt.Sprint(ext[0].Extension["servers"]) != "[https://10.1.2.3:6443]" {
		t.Errorf("kubectl reads the extensions %+v", ext)
	}
}
