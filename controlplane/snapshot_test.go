package controlplane

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store/bolt"
)

// snapshotGet asks for the store snapshot as the admin, or as user by
// impersonation when it is set.
func snapshotGet(t *testing.T, r *running, method, user string) *http.Response {
	t.Helper()
	return apiRequest(t, r, method, SnapshotPath, user, true)
}

// apiRequest sends method path to r, with the admin's token when token is
// set, as user by impersonation when user is set.
func apiRequest(t *testing.T, r *running, method, path, user string, token bool) *http.Response {
	t.Helper()
	creds := r.Credentials()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: creds.CAPool}}}
	req, err := http.NewRequest(method, "https://"+r.Addr().String()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token {
		req.Header.Set("Authorization", "Bearer "+creds.AdminToken)
	}
	if user != "" {
		req.Header.Set("Impersonate-User", user)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// statusOf decodes an error answer.
func statusOf(t *testing.T, resp *http.Response) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// The admin gets the whole store file, which verifies and holds what was
// written; nodes and service accounts are refused; other methods are not
// allowed.
func TestSnapshotEndpoint(t *testing.T) {
	r := startControlPlane(t, t.TempDir(), StoreBolt)
	cm := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}}
	if _, err := r.Store().Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	resp := snapshotGet(t, r, http.MethodGet, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admin: %s", resp.Status)
	}
	path := filepath.Join(t.TempDir(), "snap.db")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(f, resp.Body)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength != n {
		t.Fatalf("Content-Length %d, body %d bytes", resp.ContentLength, n)
	}
	info, err := bolt.Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get(SnapshotRevisionHeader); got != strconv.FormatUint(info.Revision, 10) || info.Revision == 0 {
		t.Fatalf("revision header %q, file %d", got, info.Revision)
	}
	b, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	if _, err := b.Load(func(o api.Object) error {
		found = found || o.GetName() == "kept"
		return nil
	}); err != nil || !found {
		t.Fatalf("load: %v, configmap kept found %v", err, found)
	}
	b.Close()

	for _, user := range []string{"system:node:n1", "system:serviceaccount:default:default"} {
		resp := snapshotGet(t, r, http.MethodGet, user)
		if st := statusOf(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(st.Message, "only the admin") {
			t.Errorf("%s: %s %q", user, resp.Status, st.Message)
		}
	}
	resp = snapshotGet(t, r, http.MethodPost, "")
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodGet {
		t.Errorf("POST: %s", resp.Status)
	}
}

// A server on the memory store says there is nothing to back up.
func TestSnapshotMemoryStore(t *testing.T) {
	r := startControlPlane(t, t.TempDir(), StoreMemory)
	resp := snapshotGet(t, r, http.MethodGet, "")
	if st := statusOf(t, resp); resp.StatusCode != http.StatusNotFound || !strings.Contains(st.Message, "--store memory") {
		t.Fatalf("%s %q", resp.Status, st.Message)
	}
}
