package build

import (
	"bytes"
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source/build/buildtest"
)

const plainSecret = `apiVersion: v1
kind: Secret
metadata: {name: db}
stringData:
  password: correct-horse-battery-staple
`

func TestSOPSDecrypt(t *testing.T) {
	key, recipient := buildtest.AgeKey(t)
	other, _ := buildtest.AgeKey(t)
	enc := buildtest.EncryptYAML(t, []byte(plainSecret), recipient)
	if bytes.Contains(enc, []byte("correct-horse")) {
		t.Fatal("the encrypted file holds the password")
	}
	if !Encrypted("secret.yaml", enc) || Encrypted("secret.yaml", []byte(plainSecret)) {
		t.Fatal("Encrypted does not tell the files apart")
	}
	plain, err := Decrypt("secret.yaml", enc, key)
	if err != nil {
		t.Fatal(err)
	}
	objs, errs := api.DecodeStream("secret.yaml", plain, api.DecodeOptions{DropStatus: true})
	if len(errs) > 0 || objs[0].Object.(*api.Secret).StringData["password"] != "correct-horse-battery-staple" {
		t.Fatalf("decrypted %s: %v", plain, errs)
	}

	// The wrong key, no key, a tampered file: the file is named, the key
	// and the content are not quoted.
	for _, tc := range []struct {
		name      string
		data, key []byte
		want      string
	}{
		{"wrong key", enc, other, "cannot open it (recipients: " + recipient + ")"},
		{"no key", enc, nil, "no decryption key"},
		{"tampered", bytes.Replace(enc, []byte("name: db"), []byte("name: dc"), 1), key, "MAC"},
	} {
		_, err := Decrypt("apps/secret.yaml", tc.data, tc.key)
		if err == nil || err.File != "apps/secret.yaml" || !strings.Contains(err.Message, tc.want) {
			t.Errorf("%s: %v; want an error naming apps/secret.yaml saying %q", tc.name, err, tc.want)
			continue
		}
		if strings.Contains(err.Message, "AGE-SECRET-KEY") || strings.Contains(err.Message, "correct-horse") {
			t.Errorf("%s: the error quotes a secret: %v", tc.name, err)
		}
	}
}

func TestSOPSInKustomization(t *testing.T) {
	key, recipient := buildtest.AgeKey(t)
	files := map[string]string{
		"app/kustomization.yaml": "resources: [secret.yaml]\nnamespace: prod\n",
		"app/secret.yaml":        string(buildtest.EncryptYAML(t, []byte(plainSecret), recipient)),
	}
	out, errs := Build(tree("app", files), Options{AgeKey: key})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	objs := decode(t, out)
	if s := objs[0].Object.(*api.Secret); s.Namespace != "prod" || s.StringData["password"] != "correct-horse-battery-staple" {
		t.Errorf("built %s", out[0].Data)
	}
	_, errs = Build(tree("app", files), Options{})
	if len(errs) != 1 || errs[0].File != "app/secret.yaml" {
		t.Errorf("without a key: %v", errs)
	}
}
