package controlplane

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/controlplane/pki"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
)

// A write sent to a follower reaches the leader as the user who sent it:
// a client-certificate user (whose certificate stays on the follower's
// TLS connection) and a token-file user keep their name and groups, and
// RBAC on the leader judges them, not the follower. Request headers
// naming a user are believed from the control planes' certificate only.
func TestForwardedWriteKeepsTheUser(t *testing.T) {
	ep := etcdtest.Start(t)
	u, err := url.Parse(ep)
	if err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("view-token,tina,1001,\"readers\"\nedit-token,tom,1002,\"writers\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	member := func(host, dir string) *running {
		return runControlPlane(t, Config{
			DataDir: dir, Listen: host + ":0", Store: StoreEtcdScheme + u.Host,
			Etcd: EtcdConfig{LeaseDuration: 2 * time.Second}, TokenAuthFile: tokens,
			Logger: slog.New(slog.DiscardHandler),
		})
	}
	leader := member("127.0.0.1", t.TempDir())
	poll(t, "the first control plane leads", func() error { return leads(leader) })
	follower := member("127.0.0.2", t.TempDir())

	ctx := context.Background()
	admin := adminClient(t, leader)
	bind := func(name, role, kind, subject string) {
		t.Helper()
		rb := &api.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			RoleRef:    api.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects:   []api.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: kind, Name: subject}},
		}
		if _, err := admin.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}
	bind("viewers", "view", "Group", "readers")
	bind("editors", "edit", "Group", "writers")

	// Users of client certificates the cluster CA signed, and of tokens.
	certUser := func(name, group string) *client.Client {
		t.Helper()
		kc, err := pki.UserKubeconfig(leader.Credentials().Paths.Dir, name, []string{group}, time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		_, user, err := pki.KubeconfigCurrent(kc)
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(&client.Config{Server: follower.LocalURL(), CAData: leader.Credentials().CAPEM, CertData: user.ClientCertificateData, KeyData: user.ClientKeyData})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tokenUser := func(token string) *client.Client {
		t.Helper()
		c, err := client.New(&client.Config{Server: follower.LocalURL(), CAData: leader.Credentials().CAPEM, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	create := func(c *client.Client, name string) error {
		_, err := c.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
		return err
	}
	poll(t, "the follower forwards to the leader", func() error {
		_, err := adminClient(t, follower).Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "warm-up"}})
		return err
	})
	for _, c := range []struct {
		who    string
		c      *client.Client
		name   string
		denied bool
	}{
		{"certificate user vera (view)", certUser("vera", "readers"), "by-vera", true},
		{"certificate user ed (edit)", certUser("ed", "writers"), "by-ed", false},
		{"token user tina (view)", tokenUser("view-token"), "by-tina", true},
		{"token user tom (edit)", tokenUser("edit-token"), "by-tom", false},
	} {
		err := create(c.c, c.name)
		switch {
		case c.denied && !apierrors.IsForbidden(err):
			t.Errorf("%s: create through the follower: %v, want 403", c.who, err)
		case !c.denied && err != nil:
			t.Errorf("%s: create through the follower: %v", c.who, err)
		case !c.denied:
			if _, err := leader.Store().Get(cmKind, "default", c.name); err != nil {
				t.Errorf("%s: the leader does not hold the write: %v", c.who, err)
			}
		}
		// Reads are the follower's own: the user is judged there too.
		if _, err := c.c.Get(ctx, cmKind, "default", "warm-up"); err != nil {
			t.Errorf("%s: read through the follower: %v", c.who, err)
		}
	}
	if err := create(certUser("vera", "readers"), "by-vera"); err == nil || !strings.Contains(err.Error(), `User "vera"`) {
		t.Errorf("the refusal does not name the user: %v", err)
	}

	// A client's own request headers name nobody, on either server: with
	// no credentials the request is unauthenticated, and with vera's
	// certificate it is vera's.
	kc, err := pki.UserKubeconfig(leader.Credentials().Paths.Dir, "vera", []string{"readers"}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, vera, err := pki.KubeconfigCurrent(kc)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(vera.ClientCertificateData, vera.ClientKeyData)
	if err != nil {
		t.Fatal(err)
	}
	post := func(base string, certs []tls.Certificate) int {
		t.Helper()
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: leader.Credentials().CAPool, Certificates: certs}}}
		defer hc.CloseIdleConnections()
		req, err := http.NewRequest(http.MethodPost, base+"/api/v1/namespaces/default/configmaps",
			strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"by-headers"}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(apiserver.HeaderRemoteUser, "admin")
		req.Header.Set(apiserver.HeaderRemoteGroup, "system:masters")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, cp := range []*running{leader, follower} {
		if code := post(cp.LocalURL(), nil); code != http.StatusUnauthorized {
			t.Errorf("%s: request headers and no credentials: %d, want 401", cp.LocalURL(), code)
		}
		if code := post(cp.LocalURL(), []tls.Certificate{pair}); code != http.StatusForbidden {
			t.Errorf("%s: request headers and vera's certificate: %d, want 403", cp.LocalURL(), code)
		}
	}
	if _, err := leader.Store().Get(cmKind, "default", "by-headers"); err == nil {
		t.Fatal("a client's request headers made it an admin")
	}

	// The control planes' certificate is nobody's: without a user named,
	// the leader refuses it.
	proxyCert, err := pki.EnsureAPIServerClientCert(follower.Credentials(), nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: leader.Credentials().CAPool, Certificates: []tls.Certificate{proxyCert}}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(leader.LocalURL() + "/api/v1/namespaces/default/configmaps")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the control planes' certificate alone: %d, want 401", resp.StatusCode)
	}
}
