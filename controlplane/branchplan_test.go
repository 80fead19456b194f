package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

func TestPushedBranch(t *testing.T) {
	for _, tc := range []struct{ body, branch, sha, def string }{
		{`{"ref":"refs/heads/feature/x","after":"abc","repository":{"default_branch":"main"}}`, "feature/x", "abc", "main"},
		{`{"object_kind":"push","ref":"refs/heads/fix","checkout_sha":"def","project":{"default_branch":"trunk"}}`, "fix", "def", "trunk"},
		{`{"action":"opened","pull_request":{"head":{"ref":"pr-1","sha":"123"}},"repository":{"default_branch":"main"}}`, "pr-1", "123", "main"},
		{`{"ref":"refs/tags/v1","after":"abc"}`, "", "", ""},
		{`{"zen":"ping"}`, "", "", ""},
		{`not json`, "", "", ""},
	} {
		branch, sha, def := pushedBranch([]byte(tc.body))
		if branch != tc.branch || sha != tc.sha || def != tc.def {
			t.Errorf("%s: %q %q %q", tc.body, branch, sha, def)
		}
	}
}

func FuzzPushedBranch(f *testing.F) {
	f.Add([]byte(`{"ref":"refs/heads/feature","after":"abc","repository":{"default_branch":"main"}}`))
	f.Add([]byte(`{"pull_request":{"head":{"ref":"pr","sha":"1"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		branch, _, _ := pushedBranch(body)
		if branch != "" && !bytes.Contains(body, []byte("ref")) {
			t.Fatalf("branch %q from a body without a ref", branch)
		}
	})
}

// TestWebhookPlansAPullRequestsBranch: a push to a branch the Source
// does not sync is planned, not applied, and its plan posted as a commit
// status on the branch's head: failure naming the scheduler's reason for
// a Deployment no node can hold, success for one that fits. The Source's
// own branch still syncs.
func TestWebhookPlansAPullRequestsBranch(t *testing.T) {
	repo := testtool.NewGitRepo(t, "fleet")
	base := repo.Commit("main", map[string]string{"app.yaml": cm("app", "1")})
	secretFile := filepath.Join(t.TempDir(), "hook")
	write(t, secretFile, "s3cret\n")
	cp := runControlPlane(t, Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Store: StoreMemory,
		WebhookSecretFile: secretFile, Logger: slog.New(slog.DiscardHandler)})
	st := cp.Store()
	ctx := context.Background()
	forge := newHookReceiver(t)
	node := &api.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{api.LabelHostname: "n1"}},
		Status: api.NodeStatus{
			Allocatable: api.ResourceList{api.ResourceCPU: resource.MustParse("4"), api.ResourceMemory: resource.MustParse("8Gi"), api.ResourcePods: resource.MustParse("110")},
			Conditions:  []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}},
		},
	}
	for _, o := range []api.Object{
		node,
		&api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: api.NamespaceSystem, Name: "forge"}, Data: map[string][]byte{"token": []byte("glpat")}},
		&api.Alert{ObjectMeta: metav1.ObjectMeta{Name: "plans"}, Spec: api.AlertSpec{Sources: []string{"fleet"}, Events: []string{api.AlertEventPlanned},
			Provider: api.AlertProvider{Type: api.AlertGitLab, Address: forge.URL, Repository: "ops/fleet", SecretRef: &api.SourceSecretRef{Name: "forge"}}}},
		&api.Source{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}, Spec: api.SourceSpec{Type: api.SourceTypeGit, URL: repo.URL(), Ref: "main"}},
	} {
		if _, err := st.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, "main applied", func() error {
		if got := sourceObject(t, st, "fleet").Status.LastAppliedRevision; got != base {
			return fmt.Errorf("applied %q", got)
		}
		return nil
	})

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cp.Credentials().CAPEM)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	hook := func(body string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, cp.LocalURL()+"/hooks/fleet", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(HeaderHubSignature256, sign("s3cret", body))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("webhook: %d %s", resp.StatusCode, buf.String())
		}
		return buf.String()
	}

	repo.Git(repo.Work, "checkout", "--quiet", "-b", "big")
	big := repo.Commit("big", map[string]string{"web.yaml": gatedDeployment("64")})
	if got := hook(fmt.Sprintf(`{"ref":"refs/heads/big","after":%q,"repository":{"default_branch":"main"}}`, big)); !strings.Contains(got, "plan of branch big of source fleet queued") {
		t.Fatalf("answer %s", got)
	}
	poll(t, "the failed plan's status", func() error {
		got := forge.requests()
		if len(got) != 1 {
			return fmt.Errorf("%d statuses", len(got))
		}
		if got[0].path != "/api/v4/projects/ops%2Ffleet/statuses/"+big {
			return fmt.Errorf("path %s", got[0].path)
		}
		body := string(got[0].body)
		if !strings.Contains(body, `"state":"failed"`) || !strings.Contains(body, `"name":"berth/fleet/plan"`) || !strings.Contains(body, "Insufficient cpu") {
			return fmt.Errorf("body %s", body)
		}
		return nil
	})
	if _, err := st.Get(api.KindOf(&api.Deployment{}), "default", "web"); err == nil {
		t.Fatal("the planned branch was applied")
	}

	repo.Git(repo.Work, "checkout", "--quiet", "-b", "small", "main")
	small := repo.Commit("small", map[string]string{"web.yaml": gatedDeployment("1")})
	// A pull request event, as GitHub and Gitea send it.
	hook(fmt.Sprintf(`{"action":"synchronize","pull_request":{"head":{"ref":"small","sha":%q}},"repository":{"default_branch":"main"}}`, small))
	poll(t, "the fitting plan's status", func() error {
		got := forge.requests()
		if len(got) != 2 {
			return fmt.Errorf("%d statuses", len(got))
		}
		body := string(got[1].body)
		if got[1].path != "/api/v4/projects/ops%2Ffleet/statuses/"+small || !strings.Contains(body, `"state":"success"`) || !strings.Contains(body, "fits") {
			return fmt.Errorf("path %s body %s", got[1].path, body)
		}
		return nil
	})
	if got := sourceObject(t, st, "fleet").Status.LastAppliedRevision; got != base {
		t.Fatalf("applied %q after the plans, want %q", got, base)
	}

	// The Source's own branch: a sync, as before.
	repo.Git(repo.Work, "checkout", "--quiet", "main")
	next := repo.Commit("main", map[string]string{"app.yaml": cm("app", "2")})
	if got := hook(`{"ref":"refs/heads/main","after":"` + next + `"}`); !strings.Contains(got, "sync of source fleet triggered") {
		t.Fatalf("answer %s", got)
	}
	poll(t, "main's next commit applied", func() error {
		if got := sourceObject(t, st, "fleet").Status.LastAppliedRevision; got != next {
			return fmt.Errorf("applied %q", got)
		}
		return nil
	})
}
