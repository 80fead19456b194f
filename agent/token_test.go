package agent

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// issuingRefs is fakeRefs that also issues tokens, one hour long, from a
// counter so that a rotation is visible.
type issuingRefs struct {
	*fakeRefs
	now    func() time.Time
	issued int
	// accounts are the service accounts by namespace/name; one not there
	// is found with no automountServiceAccountToken.
	accounts map[string]*api.ServiceAccount
}

func (r *issuingRefs) ServiceAccount(_ context.Context, ns, name string) (*api.ServiceAccount, error) {
	if sa, ok := r.accounts[ns+"/"+name]; ok {
		return sa, nil
	}
	return &api.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, nil
}

func (r *issuingRefs) ServiceAccountToken(_ context.Context, pod *api.Pod) (string, error) {
	r.issued++
	iat := r.now().Unix()
	payload := fmt.Sprintf(`{"sub":"system:serviceaccount:%s:%s","iat":%d,"exp":%d,"n":%d}`,
		pod.Namespace, pod.Spec.ServiceAccountName, iat, iat+3600, r.issued)
	return "e30." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".sig", nil
}

func TestServiceAccountTokenRotation(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := now
	refs := &issuingRefs{fakeRefs: testRefs(), now: func() time.Time { return at }}
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"}}
	pod.Spec.ServiceAccountName = "default"
	ctx := context.Background()

	if got := serviceAccountTokenFile(dir, pod); got != "" {
		t.Fatalf("token file before any token: %q", got)
	}
	if err := setUpServiceAccountToken(ctx, dir, refs, nil, pod, now); err != nil {
		t.Fatal(err)
	}
	file := serviceAccountTokenFile(dir, pod)
	if file == "" || refs.issued != 1 {
		t.Fatalf("after set-up: file %q, %d issued", file, refs.issued)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode: %v %v", fi, err)
	}
	if ns, _ := os.ReadFile(filepath.Join(filepath.Dir(file), "namespace")); string(ns) != "default" {
		t.Errorf("namespace file %q", ns)
	}
	// Until 80% of its hour has passed the token stays; then it is renewed.
	for _, tc := range []struct {
		after  time.Duration
		issued int
	}{{time.Minute, 1}, {47 * time.Minute, 1}, {49 * time.Minute, 2}, {60 * time.Minute, 2}, {98 * time.Minute, 3}} {
		at = now.Add(tc.after)
		if err := setUpServiceAccountToken(ctx, dir, refs, nil, pod, at); err != nil {
			t.Fatal(err)
		}
		if refs.issued != tc.issued {
			t.Errorf("after %v: %d tokens issued, want %d", tc.after, refs.issued, tc.issued)
		}
	}
	// A resolver that issues no tokens (standalone), or a static pod: none.
	other := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s", UID: "u2", Annotations: map[string]string{AnnotationConfigSource: ConfigSourceFile}}}
	other.Spec.ServiceAccountName = "default"
	if err := setUpServiceAccountToken(ctx, dir, refs, nil, other, now); err != nil || serviceAccountTokenFile(dir, other) != "" {
		t.Errorf("static pod got a token: %v", err)
	}
	if err := setUpServiceAccountToken(ctx, dir, testRefs(), nil, pod, now.Add(24*time.Hour)); err != nil {
		t.Errorf("resolver without tokens: %v", err)
	}
}

// TestServiceAccountTokenAutomount: a pod's automountServiceAccountToken,
// else its service account's, false gives it no token, and removes one it
// had; a pod's true wins over its account's false.
func TestServiceAccountTokenAutomount(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	no, yes := false, true
	refs := &issuingRefs{fakeRefs: testRefs(), now: func() time.Time { return now }, accounts: map[string]*api.ServiceAccount{
		"default/quiet": {AutomountServiceAccountToken: &no},
	}}
	ctx := context.Background()
	for i, tc := range []struct {
		account string
		pod     *bool
		token   bool
	}{
		{"default", nil, true},
		{"default", &no, false},
		{"quiet", nil, false},
		{"quiet", &yes, true},
	} {
		pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: types.UID(fmt.Sprint("u", i))}}
		pod.Spec.ServiceAccountName, pod.Spec.AutomountServiceAccountToken = tc.account, tc.pod
		if err := setUpServiceAccountToken(ctx, dir, refs, nil, pod, now); err != nil {
			t.Fatal(err)
		}
		if got := serviceAccountTokenFile(dir, pod) != ""; got != tc.token {
			t.Errorf("account %s, pod's automount %v: token %v, want %v", tc.account, tc.pod, got, tc.token)
		}
	}
	// A pod that had a token and is then told not to mount one loses it.
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "u0"}}
	pod.Spec.ServiceAccountName, pod.Spec.AutomountServiceAccountToken = "default", &no
	if err := setUpServiceAccountToken(ctx, dir, refs, nil, pod, now); err != nil || serviceAccountTokenFile(dir, pod) != "" {
		t.Errorf("the token is still there: %v", err)
	}
}

func TestTokenLifetime(t *testing.T) {
	for _, tok := range []string{"", "a.b", "a.!!!.c", "a." + base64.RawURLEncoding.EncodeToString([]byte(`{"iat":5,"exp":5}`)) + ".c"} {
		if _, _, err := tokenLifetime(tok); err == nil {
			t.Errorf("tokenLifetime(%q) accepted", tok)
		}
	}
}

func TestTokenFileInEnv(t *testing.T) {
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"}}
	c := &api.Container{Name: "c", Env: []api.EnvVar{{Name: "F", Value: "$(" + EnvServiceAccountTokenFile + ")"}}}
	env, vars, err := containerEnv(context.Background(), envSource{pod: pod, tokenFile: "/data/pods/u1/serviceaccount/token"}, c)
	if err != nil {
		t.Fatal(err)
	}
	if vars[EnvServiceAccountTokenFile] != "/data/pods/u1/serviceaccount/token" {
		t.Errorf("env %v: no token file", env)
	}
	if _, vars, _ := containerEnv(context.Background(), envSource{pod: pod}, c); vars[EnvServiceAccountTokenFile] != "" {
		t.Errorf("token file without a token: %v", vars)
	}
}

// TestServiceAccountCA: the CAs the agent trusts for the server are
// written beside the token as ca.crt, follow a change of them even while
// the token is fresh, and are removed when the agent trusts none of its
// own (system CAs, or none at all).
func TestServiceAccountCA(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	refs := &issuingRefs{fakeRefs: testRefs(), now: func() time.Time { return now }}
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1"}}
	pod.Spec.ServiceAccountName = "default"
	ctx := context.Background()
	ca := filepath.Join(serviceAccountDir(dir, "u1"), "ca.crt")
	for i, want := range []string{"-----BEGIN CERTIFICATE-----\none\n", "-----BEGIN CERTIFICATE-----\ntwo\n", ""} {
		if err := setUpServiceAccountToken(ctx, dir, refs, []byte(want), pod, now.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(ca)
		switch {
		case want == "" && !os.IsNotExist(err):
			t.Errorf("no CA: ca.crt is there (%q, %v)", got, err)
		case want != "" && string(got) != want:
			t.Errorf("ca.crt = %q, %v; want %q", got, err, want)
		case want != "":
			if fi, err := os.Stat(ca); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("ca.crt mode: %v %v", fi, err)
			}
		}
	}
	if refs.issued != 1 {
		t.Errorf("%d tokens issued: the CA's change must not renew the token", refs.issued)
	}
}
