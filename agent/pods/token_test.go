package pods

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// issuingRefs is fakeRefs that also issues tokens, one hour long, from a
// counter so that a rotation is visible.
type issuingRefs struct {
	*fakeRefs
	now func() time.Time
	// mu guards issued: the workers of several pods ask at once.
	mu     sync.Mutex
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

func (r *issuingRefs) ServiceAccountToken(_ context.Context, pod *api.Pod, audiences []string, seconds int64) (string, error) {
	r.mu.Lock()
	r.issued++
	n := r.issued
	r.mu.Unlock()
	iat := r.now().Unix()
	aud, _ := json.Marshal(audiences)
	payload := fmt.Sprintf(`{"sub":"system:serviceaccount:%s:%s","aud":%s,"iat":%d,"exp":%d,"n":%d}`,
		pod.Namespace, pod.Spec.ServiceAccountName, aud, iat, iat+seconds, n)
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

// TestProjectedServiceAccountToken writes a projected serviceAccountToken
// at its path with its audience and lifetime, keeps it until it has lived
// 80% of that, then asks for a new one, as the kubelet's token manager
// does; beside it the volume's other sources. A static pod gets none: no
// API server issues it one.
func TestProjectedServiceAccountToken(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := now
	refs := &issuingRefs{fakeRefs: testRefs(), now: func() time.Time { return at }}
	ten := int64(600)
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u-projected"},
		Spec: api.PodSpec{ServiceAccountName: "builder", Volumes: []api.Volume{{Name: "vault", VolumeSource: api.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: &ten, Path: "tokens/vault"}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "api"}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		}}}}}},
	}
	api.Default(pod)
	dataDir := t.TempDir()
	claims := func(path string) map[string]any {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(string(b), ".")
		payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
		var m map[string]any
		if err := json.Unmarshal(payload, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return m
	}
	setUp := func() string {
		t.Helper()
		paths, err := setUpVolumes(context.Background(), volumeEnv{dataDir: dataDir, refs: refs, now: at}, pod)
		if err != nil {
			t.Fatal(err)
		}
		return paths["vault"]
	}
	dir := setUp()
	vault, apiTok := claims(filepath.Join(dir, "tokens/vault")), claims(filepath.Join(dir, "api"))
	if aud, _ := json.Marshal(vault["aud"]); string(aud) != `["vault"]` || vault["exp"].(float64)-vault["iat"].(float64) != 600 ||
		vault["sub"] != "system:serviceaccount:default:builder" {
		t.Errorf("the vault token: %v", vault)
	}
	if apiTok["aud"] != nil || apiTok["exp"].(float64)-apiTok["iat"].(float64) != 3600 {
		t.Errorf("the API token (no audience, an hour): %v", apiTok)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "name")); string(b) != "web" {
		t.Errorf("the downwardAPI source beside the tokens: %q", b)
	}
	if refs.issued != 2 {
		t.Fatalf("%d tokens issued, want 2", refs.issued)
	}
	// 80% of ten minutes is eight: until then both stay; past it the
	// vault token is renewed and the hour-long one kept.
	for _, tc := range []struct {
		after  time.Duration
		issued int
	}{{time.Minute, 2}, {7*time.Minute + 59*time.Second, 2}, {8*time.Minute + time.Second, 3}, {12 * time.Minute, 3}, {17 * time.Minute, 4}, {49 * time.Minute, 6}} {
		at = now.Add(tc.after)
		setUp()
		if refs.issued != tc.issued {
			t.Errorf("after %v: %d tokens issued, want %d", tc.after, refs.issued, tc.issued)
		}
	}
	if n := claims(filepath.Join(dir, "tokens/vault"))["n"].(float64); n != 5 {
		t.Errorf("the vault token on disk is the %vth issued, want the 5th (the 6th is the API token)", n)
	}

	static := pod.DeepCopy()
	static.UID = "u-static"
	static.Annotations = map[string]string{AnnotationConfigSource: ConfigSourceFile}
	_, err := setUpVolumes(context.Background(), volumeEnv{dataDir: dataDir, refs: refs, now: at}, static)
	var ce *configError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "serviceAccountToken tokens/vault: no API server issues tokens for this pod") {
		t.Errorf("a static pod's projected token: %v", err)
	}
}
