package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source/build"
	"github.com/berth-dev/berth/source/build/buildtest"
)

// TestDecoderOpensSOPSFiles decodes a plain folder holding a Secret
// encrypted with SOPS: the wrong key holds it back naming the file, and
// the right key then opens the very same content (a failure is not kept).
func TestDecoderOpensSOPSFiles(t *testing.T) {
	key, recipient := buildtest.AgeKey(t)
	other, _ := buildtest.AgeKey(t)
	enc := buildtest.EncryptYAML(t, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: hunter2}\n"), recipient)
	c := Contents{Files: []File{{Name: "apps/db.yaml", Data: enc}, {Name: "apps/cm.yaml", Data: []byte(configMap("cm"))}}}
	d := Decoder{Build: buildOptionsWithKey(other)}
	objs, errs := d.Decode(c)
	if len(errs) != 1 || errs[0].File != "apps/db.yaml" || len(objs) != 1 {
		t.Fatalf("the wrong key: %d objects, %v", len(objs), errs)
	}
	d.Build.AgeKey = key
	objs, errs = d.Decode(c)
	if len(errs) > 0 || len(objs) != 2 || objs[1].Object.(*api.Secret).StringData["password"] != "hunter2" {
		t.Fatalf("the right key: %d objects, %v", len(objs), errs)
	}

	// From the caller, as bytes.
	d = NewDecoder(Spec{Name: "apps", Build: buildOptionsWithKey(key)})
	if objs, errs := d.Decode(c); len(errs) > 0 || len(objs) != 2 {
		t.Fatalf("a key given as bytes: %v", errs)
	}

	// From a --source option: the key file, read at each Decode.
	keyFile := filepath.Join(t.TempDir(), "age.key")
	spec, err := Parse("name=apps,decryption-key-file=" + keyFile + "," + t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d = NewDecoder(spec)
	if _, errs := d.Decode(c); len(errs) != 1 || errs[0].File != keyFile {
		t.Fatalf("a missing key file: %v", errs)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	if objs, errs := d.Decode(c); len(errs) > 0 || len(objs) != 2 {
		t.Fatalf("the key file: %v", errs)
	}
}

// TestReadDirOfAKustomization reads a directory holding a kustomization:
// every file (a generator's .env too, not a dot folder) for the build,
// which the Decoder then runs.
func TestReadDirOfAKustomization(t *testing.T) {
	root := t.TempDir()
	for name, data := range map[string]string{
		"kustomization.yaml": "namespace: shop\nresources: [cm.yaml]\nconfigMapGenerator: [{name: env, envs: [.env]}]\n",
		".env":               "A=1\n",
		"cm.yaml":            configMap("cm"),
		"notes.txt":          "not a manifest",
		".git/config":        "[core]",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, _, err := ReadDir(root, ReadDirOptions{Cache: &ReadCache{}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range c.Files {
		names = append(names, f.Name)
	}
	if c.BuildDir != "." || strings.Join(names, " ") != ".env cm.yaml kustomization.yaml notes.txt" {
		t.Fatalf("build %q of %v", c.BuildDir, names)
	}
	objs, errs := c.Decode()
	if len(errs) > 0 || len(objs) != 2 || objs[0].Object.GetNamespace() != "shop" || objs[0].File != "kustomization.yaml" {
		t.Fatalf("%d objects, %v", len(objs), errs)
	}
}

func buildOptionsWithKey(key []byte) build.Options { return build.Options{AgeKey: key} }
