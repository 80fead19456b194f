package git

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/source/build/buildtest"
)

const password = "correct-horse-battery-staple"

// TestGitKustomizeOverlaysFromOneRepository runs two sources of one
// repository, one per environment's overlay, whose shared base holds a
// Secret encrypted with SOPS: each gets its overlay built, the Secret
// opened with the age key named by decryption-key-file=, and the
// password is found in no file of the cache or the temporary folder.
func TestGitKustomizeOverlaysFromOneRepository(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	key, recipient := buildtest.AgeKey(t)
	keyFile := filepath.Join(t.TempDir(), "age.key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	secret := buildtest.EncryptYAML(t, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: "+password+"}\n"), recipient)
	r := newRemote(t)
	c1 := r.commit("main", map[string]string{
		"base/kustomization.yaml":             "resources: [app.yaml, secret.yaml]\nconfigMapGenerator: [{name: env, envs: [.env]}]\n",
		"base/.env":                           "COLOR=blue\n",
		"base/app.yaml":                       configMap("app", "1"),
		"base/secret.yaml":                    string(secret),
		"overlays/staging/kustomization.yaml": "namespace: staging\nresources: [../../base]\n",
		"overlays/prod/kustomization.yaml":    "namespace: prod\nnamePrefix: prod-\nresources: [../../base]\n",
		"plain/a.yaml":                        configMap("plain", "1"),
	})
	data := t.TempDir()
	staging := start(t, "git+"+r.url()+"?name=staging&path=overlays/staging&decryption-key-file="+keyFile, filepath.Join(data, "staging"))
	prod := start(t, "git+"+r.url()+"?name=prod&path=overlays/prod&decryption-key-file="+keyFile, filepath.Join(data, "prod"))
	for _, tc := range []struct {
		h    *harness
		want string
	}{
		{staging, "staging/app staging/db staging/env-*"},
		{prod, "prod/prod-app prod/prod-db prod/prod-env-*"},
	} {
		rev := tc.h.receive()
		if !rev.OK() || rev.ID != c1 {
			t.Fatalf("revision %s: %v %v", rev.ID, rev.Errors, rev.Err)
		}
		if got := built(t, rev); got != tc.want {
			t.Errorf("objects %s, want %s", got, tc.want)
		}
	}
	scanForPlaintext(t, []byte(password), data, tmp)

	// A commit that breaks the base holds both back, naming the file; a
	// key that cannot open the Secret too.
	r.commit("main", map[string]string{"base/kustomization.yaml": "resources: [app.yaml, secret.yaml, gone.yaml]\n"})
	for _, h := range []*harness{staging, prod} {
		rev := h.trigger()
		if rev.OK() || len(rev.Errors) != 1 || rev.Errors[0].File != "overlays/"+h.src.spec.Name+"/kustomization.yaml" || !strings.Contains(rev.Errors[0].Message, "gone.yaml") {
			t.Errorf("%s: a broken base: %v %v", h.src.spec.Name, rev.Errors, rev.Err)
		}
	}
	r.commit("main", map[string]string{"base/kustomization.yaml": "resources: [app.yaml, secret.yaml]\n"})
	other, _ := buildtest.AgeKey(t)
	if err := os.WriteFile(keyFile, other, 0o600); err != nil {
		t.Fatal(err)
	}
	rev := prod.trigger()
	if rev.OK() || len(rev.Errors) != 1 || rev.Errors[0].File != "base/secret.yaml" || !strings.Contains(rev.Errors[0].Message, "cannot open") {
		t.Errorf("the wrong key: %v %v", rev.Errors, rev.Err)
	}
	scanForPlaintext(t, []byte(password), data, tmp)

	// A plain folder of the same repository is read as before: manifests
	// only, no build.
	h := start(t, "git+"+r.url()+"?name=plain&path=plain", "")
	if rev := h.receive(); !rev.OK() || objects(rev) != "plain/a.yaml:plain" {
		t.Errorf("plain: %s %v %v", objects(rev), rev.Errors, rev.Err)
	}
}

// built lists a revision's objects as namespace/name, a generated
// name's hash as *.
func built(t *testing.T, rev source.Revision) string {
	t.Helper()
	var out []string
	for _, d := range rev.Objects {
		name := d.Object.GetName()
		switch o := d.Object.(type) {
		case *api.Secret:
			if o.StringData["password"] != password {
				t.Errorf("Secret %s not decrypted: %v", name, o.StringData)
			}
		case *api.ConfigMap:
			if o.Data["COLOR"] == "blue" {
				name = name[:strings.LastIndexByte(name, '-')] + "-*"
			}
		}
		out = append(out, d.Object.GetNamespace()+"/"+name)
	}
	return strings.Join(out, " ")
}

// scanForPlaintext fails when any file below the folders holds secret.
func scanForPlaintext(t *testing.T, secret []byte, dirs ...string) {
	t.Helper()
	n := 0
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n++
			if bytes.Contains(data, secret) {
				t.Errorf("%s holds the decrypted secret", p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n == 0 {
		t.Fatal("no file scanned")
	}
}
