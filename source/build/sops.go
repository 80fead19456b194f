package build

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/stores/dotenv"
	"github.com/getsops/sops/v3/stores/ini"
	"github.com/getsops/sops/v3/stores/json"
	"github.com/getsops/sops/v3/stores/yaml"

	"github.com/berth-dev/berth/api"
)

// encMarker is in every value SOPS encrypts, its MAC included: a file
// without it is not encrypted, and is not parsed to find out.
var encMarker = []byte("ENC[AES256_GCM,")

// Encrypted reports whether a file is encrypted with SOPS: its format
// (from its name, as SOPS picks it) holds SOPS's metadata.
func Encrypted(name string, data []byte) bool {
	if !bytes.Contains(data, encMarker) || !bytes.Contains(data, []byte("sops")) {
		return false
	}
	_, err := storeFor(name).LoadEncryptedFile(data)
	return err == nil
}

// sopsStore is what SOPS's stores of every format do.
type sopsStore interface {
	LoadEncryptedFile(data []byte) (sops.Tree, error)
	EmitPlainFile(branches sops.TreeBranches) ([]byte, error)
}

// storeFor is SOPS's store of a file's format, by its name.
func storeFor(name string) sopsStore {
	c := config.NewStoresConfig()
	switch formats.FormatForPath(name) {
	case formats.Yaml:
		return yaml.NewStore(&c.YAML)
	case formats.Json:
		return json.NewStore(&c.JSON)
	case formats.Dotenv:
		return dotenv.NewStore(&c.Dotenv)
	case formats.Ini:
		return ini.NewStore(&c.INI)
	}
	return json.NewBinaryStore(&c.JSONBinary)
}

// Decrypt opens a file encrypted with SOPS with the age identities in
// key, in memory, and checks its MAC. The error names the file and never
// holds its content.
func Decrypt(name string, data, key []byte) ([]byte, *api.Error) {
	store := storeFor(name)
	tree, err := store.LoadEncryptedFile(data)
	if err != nil {
		return nil, fileError(name, "SOPS: %v", err)
	}
	if len(bytes.TrimSpace(key)) == 0 {
		return nil, fileError(name, "encrypted with SOPS, and the source has no decryption key")
	}
	var ids sopsage.ParsedIdentities
	if err := ids.Import(string(key)); err != nil {
		return nil, fileError(name, "SOPS: the decryption key holds no age identity: %v", redact(err))
	}
	svc := keyservice.NewCustomLocalClient(ageServer{ids: ids})
	dataKey, err := tree.Metadata.GetDataKeyWithKeyServices([]keyservice.KeyServiceClient{svc}, nil)
	if err != nil {
		return nil, fileError(name, "SOPS: the decryption key cannot open it (recipients: %s)", recipients(tree.Metadata))
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(dataKey, cipher)
	if err != nil {
		return nil, fileError(name, "SOPS: %v", err)
	}
	want, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, fileError(name, "SOPS: the MAC cannot be read: %v", err)
	}
	if want != mac {
		return nil, fileError(name, "SOPS: the content does not match its MAC: changed after it was encrypted")
	}
	plain, err := store.EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, fileError(name, "SOPS: %v", err)
	}
	return plain, nil
}

// decryptAll opens every encrypted file of a tree, in a copy of the list.
func decryptAll(files []File, key []byte) ([]File, api.ErrorList) {
	var errs api.ErrorList
	out := files
	copied := false
	for i, f := range files {
		if !Encrypted(f.Name, f.Data) {
			continue
		}
		plain, err := Decrypt(f.Name, f.Data, key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !copied {
			out = append([]File(nil), files...)
			copied = true
		}
		out[i].Data = plain
	}
	return out, errs
}

// recipients lists the age recipients a file was encrypted for, to say
// which key it wants.
func recipients(m sops.Metadata) string {
	var b bytes.Buffer
	for _, g := range m.KeyGroups {
		for _, k := range g {
			if ak, ok := k.(*sopsage.MasterKey); ok {
				if b.Len() > 0 {
					b.WriteString(", ")
				}
				b.WriteString(ak.Recipient)
			}
		}
	}
	if b.Len() == 0 {
		return "none of age"
	}
	return b.String()
}

// redact keeps an identity parse error from quoting the key.
func redact(err error) error {
	if bytes.Contains([]byte(err.Error()), []byte("AGE-SECRET-KEY")) {
		return errors.New("malformed identity")
	}
	return err
}

// ageServer is a SOPS key service that opens age-encrypted data keys with
// identities held in memory: SOPS's own looks for them in the process's
// environment and files, which a server with many sources cannot use.
type ageServer struct {
	keyservice.UnimplementedKeyServiceServer
	ids sopsage.ParsedIdentities
}

func (s ageServer) Decrypt(_ context.Context, req *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	k := req.GetKey().GetAgeKey()
	if k == nil {
		return nil, fmt.Errorf("only age keys are supported")
	}
	mk := &sopsage.MasterKey{Recipient: k.Recipient, EncryptedKey: string(req.GetCiphertext())}
	s.ids.ApplyToMasterKey(mk)
	plain, err := mk.Decrypt()
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}
