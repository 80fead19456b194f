// Package buildtest makes what tests of builds need: age keys generated on
// the spot and files encrypted with the SOPS library, as `sops --encrypt
// --age` writes them.
package buildtest

import (
	"path"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
)

// AgeKey is a fresh age identity: the private key file's content and the
// recipient to encrypt for.
func AgeKey(t testing.TB) (identity []byte, recipient string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return []byte("# created by a test\n" + id.String() + "\n"), id.Recipient().String()
}

// EncryptYAML encrypts a YAML file for the age recipients with SOPS,
// leaving apiVersion, kind and metadata in the clear as the usual
// encrypted_regex for Secrets does.
func EncryptYAML(t testing.TB, plain []byte, recipients ...string) []byte {
	t.Helper()
	return Encrypt(t, "file.yaml", plain, Rules{EncryptedRegex: "^(data|stringData)$"}, recipients...)
}

// Rules are the choices of `sops --encrypt` that say which values are
// encrypted and which the MAC covers.
type Rules struct {
	EncryptedRegex, UnencryptedRegex   string
	EncryptedSuffix, UnencryptedSuffix string
	MACOnlyEncrypted                   bool
}

// Encrypt encrypts a file for the age recipients with the SOPS library,
// in the format SOPS picks by the file's name (YAML, JSON, or binary).
func Encrypt(t testing.TB, name string, plain []byte, rules Rules, recipients ...string) []byte {
	t.Helper()
	store := storeFor(name)
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var group sops.KeyGroup
	for _, r := range recipients {
		mk, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			t.Fatal(err)
		}
		group = append(group, mk)
	}
	tree := sops.Tree{
		Branches: branches,
		Metadata: sops.Metadata{
			KeyGroups:         []sops.KeyGroup{group},
			EncryptedRegex:    rules.EncryptedRegex,
			UnencryptedRegex:  rules.UnencryptedRegex,
			EncryptedSuffix:   rules.EncryptedSuffix,
			UnencryptedSuffix: rules.UnencryptedSuffix,
			MACOnlyEncrypted:  rules.MACOnlyEncrypted,
			Version:           "3.13.3",
		},
	}
	dataKey, errs := tree.GenerateDataKeyWithKeyServices([]keyservice.KeyServiceClient{keyservice.NewLocalClient()})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tree.Metadata.LastModified = time.Now().UTC()
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		t.Fatal(err)
	}
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		t.Fatal(err)
	}
	out, err := store.EmitEncryptedFile(tree)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// store is what SOPS's stores of every format do.
type store interface {
	LoadPlainFile(data []byte) (sops.TreeBranches, error)
	EmitEncryptedFile(sops.Tree) ([]byte, error)
}

func storeFor(name string) store {
	switch path.Ext(name) {
	case ".yaml", ".yml":
		return sopsyaml.NewStore(&config.YAMLStoreConfig{})
	case ".json":
		return sopsjson.NewStore(&config.JSONStoreConfig{})
	}
	return sopsjson.NewBinaryStore(&config.JSONBinaryStoreConfig{})
}
