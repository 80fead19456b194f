package controlplane

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// hookReceiver records what an httptest server is sent.
type hookReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []hookRequest
}

type hookRequest struct {
	path   string
	header http.Header
	body   []byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got = append(h.got, hookRequest{path: r.URL.EscapedPath(), header: r.Header.Clone(), body: body})
		h.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

// statuses are the commit statuses a GitHub-like receiver got, as
// "sha state context".
func (h *hookReceiver) statuses(t *testing.T) []string {
	var out []string
	for _, r := range h.requests() {
		var body map[string]string
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatal(err)
		}
		sha := r.path[strings.LastIndex(r.path, "/")+1:]
		out = append(out, fmt.Sprintf("%s %s %s %s", strings.TrimSuffix(r.path, sha), sha, body["state"], body["context"]))
	}
	return out
}

// TestAlertsOfAGitSource: a git Source's syncs are sent to a signed
// generic webhook and as GitHub commit statuses on the synced commit:
// applied (success), a broken commit (failure), and a drift correction
// (webhook only); a receiver that never answers delays none of it.
func TestAlertsOfAGitSource(t *testing.T) {
	repo := testtool.NewGitRepo(t, "fleet")
	sha1 := repo.Commit("main", map[string]string{"app.yaml": cm("app", "1")})
	cp := startControlPlane(t, t.TempDir(), StoreMemory)
	st := cp.Store()
	ctx := context.Background()
	hook, forge := newHookReceiver(t), newHookReceiver(t)
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(release) })
	objs := []api.Object{
		&api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: api.NamespaceSystem, Name: "hook"}, Data: map[string][]byte{"token": []byte("k3y")}},
		&api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: api.NamespaceSystem, Name: "forge"}, Data: map[string][]byte{"token": []byte("ghp_x")}},
		&api.Alert{ObjectMeta: metav1.ObjectMeta{Name: "hung"}, Spec: api.AlertSpec{Sources: []string{"*"},
			Provider: api.AlertProvider{Type: api.AlertGeneric, Address: hung.URL}}},
		&api.Alert{ObjectMeta: metav1.ObjectMeta{Name: "hook"}, Spec: api.AlertSpec{Sources: []string{"fleet"},
			Provider: api.AlertProvider{Type: api.AlertGeneric, Address: hook.URL, SecretRef: &api.SourceSecretRef{Name: "hook"}}}},
		&api.Alert{ObjectMeta: metav1.ObjectMeta{Name: "commits"}, Spec: api.AlertSpec{Sources: []string{"*"},
			Provider: api.AlertProvider{Type: api.AlertGitHub, Address: forge.URL, Repository: "ops/fleet", SecretRef: &api.SourceSecretRef{Name: "forge"}}}},
		&api.Source{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}, Spec: api.SourceSpec{Type: api.SourceTypeGit, URL: repo.URL(), Ref: "main"}},
	}
	for _, o := range objs {
		if _, err := st.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, "the first commit's status", func() error {
		if got := forge.statuses(t); len(got) != 1 || got[0] != "/repos/ops/fleet/statuses/ "+sha1+" success berth/fleet" {
			return fmt.Errorf("statuses %q", got)
		}
		return nil
	})
	if got := forge.requests()[0].header.Get("Authorization"); got != "Bearer ghp_x" {
		t.Errorf("Authorization %q", got)
	}

	sha2 := repo.Commit("main", map[string]string{"app.yaml": cm("app", "2") + "imagee: x\n"})
	cp.sources.Trigger("fleet")
	poll(t, "the broken commit's status", func() error {
		if got := forge.statuses(t); len(got) != 2 || got[1] != "/repos/ops/fleet/statuses/ "+sha2+" failure berth/fleet" {
			return fmt.Errorf("statuses %q", got)
		}
		return nil
	})

	// Drift: the ConfigMap changed through the store is reverted.
	obj, err := st.Get(api.KindOf(&api.ConfigMap{}), "default", "app")
	if err != nil {
		t.Fatal(err)
	}
	changed := obj.(*api.ConfigMap).DeepCopy()
	changed.Data["key"] = "edited"
	if _, err := st.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	var events []string
	poll(t, "applied, failed and driftCorrected at the webhook", func() error {
		events = events[:0]
		for _, r := range hook.requests() {
			mac := hmac.New(sha256.New, []byte("k3y"))
			mac.Write(r.body)
			if r.header.Get(api.HeaderAlertSignature) != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
				return fmt.Errorf("bad signature %q", r.header.Get(api.HeaderAlertSignature))
			}
			var ev struct{ Type, Revision, Message string }
			if err := json.Unmarshal(r.body, &ev); err != nil {
				return err
			}
			events = append(events, ev.Type+" "+ev.Revision)
		}
		if len(events) != 3 {
			return fmt.Errorf("events %q", events)
		}
		return nil
	})
	want := []string{"applied " + sha1, "failed " + sha2, "driftCorrected " + sha1}
	for i := range want {
		if events[i] != want[i] {
			t.Errorf("events %q, want %q", events, want)
		}
	}
	if data, _ := configData(st, "app"); data != "1" {
		t.Errorf("drift not reverted: %q", data)
	}
	poll(t, "the alerts' status", func() error {
		obj, err := st.Get(api.KindOf(&api.Alert{}), "", "commits")
		if err != nil {
			return err
		}
		if a := obj.(*api.Alert); a.Status.Sent != 2 || a.Status.LastSentTime == nil {
			return fmt.Errorf("status %+v", a.Status)
		}
		return nil
	})
}
