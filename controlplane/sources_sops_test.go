package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source/build/buildtest"
)

// TestSourceDecryption: a Secret encrypted with SOPS for an age key is
// applied decrypted once the Source names the Secret holding the key
// (spec.decryption), and its plain text is found nowhere in the data
// dir; without the key the revision is refused, naming the file.
func TestSourceDecryption(t *testing.T) {
	identity, recipient := buildtest.AgeKey(t)
	const plain = "hunter2-plain-value"
	manifests := t.TempDir()
	secret := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: %s\n", plain)
	write(t, filepath.Join(manifests, "db.yaml"), string(buildtest.EncryptYAML(t, []byte(secret), recipient)))
	dataDir := t.TempDir()
	cp := startControlPlane(t, dataDir, StoreBolt)
	st := cp.Store()
	ctx := context.Background()

	src := &api.Source{ObjectMeta: metav1.ObjectMeta{Name: "vault"}, Spec: api.SourceSpec{Type: api.SourceTypeDir, URL: manifests,
		Decryption: &api.SourceDecryption{Provider: "sops", SecretRef: api.SourceSecretRef{Name: "age"}}}}
	if _, err := st.Create(ctx, src); err != nil {
		t.Fatal(err)
	}
	poll(t, "the missing key said", func() error {
		if s, r := readyOf(sourceObject(t, st, "vault")); s != "False" || r != api.ReasonFetchFailed {
			return fmt.Errorf("ready %s %s", s, r)
		}
		return nil
	})
	key := &api.Secret{ObjectMeta: metav1.ObjectMeta{Name: "age", Namespace: api.NamespaceSystem}, Data: map[string][]byte{"age.agekey": identity}}
	if _, err := st.Create(ctx, key); err != nil {
		t.Fatal(err)
	}
	poll(t, "the secret decrypted", func() error {
		obj, err := st.Get(api.KindOf(&api.Secret{}), "default", "db")
		if err != nil {
			return err
		}
		if got := string(obj.(*api.Secret).Data["password"]); got != plain {
			return fmt.Errorf("password %q", got)
		}
		return nil
	})
	cp.stop()
	err := filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(plain)) {
			t.Errorf("%s holds the secret in plain text", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
