package build

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/berth-dev/berth/source/build/buildtest"
)

// A document of every kind of value SOPS types: what berth opens must be
// what was encrypted, with the MAC checked over each.
const everyValue = `# a comment SOPS encrypts too
apiVersion: v1
kind: ConfigMap
metadata:
  name: every   # inline
  labels: {tier: "1", team: blue}
data:
  count: 3
  ratio: 0.25
  small: 2.5e-3
  "on": true
  off_suffix_unencrypted: false
  nothing: null
  empty: ""
  numeric: "123"
  truthy: "true"
  multi: |
    line one
    line two
  unicode: "h\u00e9llo, \u4e16\u754c"
  list:
    - a
    - 2
    # a comment in a list
    - {nested: [x, {deep: 1.5}]}
`

const secondDoc = `---
apiVersion: v1
kind: Secret
metadata: {name: second}
stringData: {token: s3cr3t}
`

func TestSOPSOpensWhatSOPSWrote(t *testing.T) {
	key, recipient := buildtest.AgeKey(t)
	jsonDoc := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j"},"data":{"n":7,"f":2.5,"b":false,"z":null,"s":"x\"y","l":[1,"two",{"three":3}]}}`
	for _, tc := range []struct {
		name, file, plain string
		rules             buildtest.Rules
	}{
		{"yaml, all encrypted", "a.yaml", everyValue, buildtest.Rules{}},
		{"yaml, two documents", "a.yaml", everyValue + secondDoc, buildtest.Rules{}},
		{"yaml, encrypted_regex", "a.yml", everyValue + secondDoc, buildtest.Rules{EncryptedRegex: "^(data|stringData)$"}},
		{"yaml, unencrypted_suffix", "a.yaml", everyValue, buildtest.Rules{UnencryptedSuffix: "_unencrypted"}},
		{"yaml, encrypted_suffix", "a.yaml", everyValue, buildtest.Rules{EncryptedSuffix: "ratio"}},
		{"yaml, unencrypted_regex", "a.yaml", everyValue, buildtest.Rules{UnencryptedRegex: "^(metadata|kind)$"}},
		{"yaml, mac_only_encrypted", "a.yaml", everyValue, buildtest.Rules{EncryptedRegex: "^data$", MACOnlyEncrypted: true}},
		{"json", "a.json", jsonDoc, buildtest.Rules{}},
		{"json, encrypted_regex", "a.json", jsonDoc, buildtest.Rules{EncryptedRegex: "^data$"}},
		{"binary", "id_rsa", "-----BEGIN KEY-----\nabc\n", buildtest.Rules{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := buildtest.Encrypt(t, tc.file, []byte(tc.plain), tc.rules, recipient)
			if !Encrypted(tc.file, enc) {
				t.Fatalf("not seen as encrypted:\n%s", enc)
			}
			plain, err := Decrypt(tc.file, enc, key)
			if err != nil {
				t.Fatalf("%v\n%s", err, enc)
			}
			if tc.file == "id_rsa" {
				if string(plain) != tc.plain {
					t.Fatalf("opened %q, want %q", plain, tc.plain)
				}
				return
			}
			if got, want := docs(t, plain), docs(t, []byte(tc.plain)); !reflect.DeepEqual(got, want) {
				t.Errorf("opened\n%s\nas %#v\nwant %#v", plain, got, want)
			}
			if bytes.Contains(plain, []byte("sops")) || bytes.Contains(plain, []byte("ENC[")) {
				t.Errorf("the metadata or an encrypted value is left:\n%s", plain)
			}
		})
	}
}

// docs decodes every document of a YAML (or JSON) stream.
func docs(t *testing.T, data []byte) []any {
	t.Helper()
	var out []any
	d := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var v any
		err := d.Decode(&v)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%v in\n%s", err, data)
		}
		out = append(out, v)
	}
}

func TestSOPSRefusesWhatWasChanged(t *testing.T) {
	key, recipient := buildtest.AgeKey(t)
	plain := "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData:\n  user: admin\n  password: hunter2\n"
	enc := string(buildtest.EncryptYAML(t, []byte(plain), recipient))
	lines := strings.Split(enc, "\n")
	var user, password int
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "    user:"):
			user = i
		case strings.HasPrefix(l, "    password:"):
			password = i
		}
	}
	swapped := append([]string(nil), lines...)
	swapped[user] = "    user:" + strings.TrimPrefix(lines[password], "    password:")
	swapped[password] = "    password:" + strings.TrimPrefix(lines[user], "    user:")
	for _, tc := range []struct {
		name, data, want string
	}{
		{"values swapped between keys", strings.Join(swapped, "\n"), "stringData.user: cannot be opened with the data key"},
		{"a clear value changed", strings.Replace(enc, "kind: Secret", "kind: ConfigMap", 1), "does not match its MAC"},
		{"a value added in the clear", strings.Replace(enc, "metadata:\n", "metadata:\n    namespace: other\n", 1), "does not match its MAC"},
		{"no metadata", plain + "x: ENC[AES256_GCM,data:YQ==,iv:YQ==,tag:YWFhYWFhYWFhYWFhYWFhYQ==,type:str]\n", "no SOPS metadata"},
		{"comment rules", strings.Replace(enc, "sops:\n", "sops:\n    encrypted_comment_regex: x\n", 1), "comment"},
		{"an alias", strings.Replace(enc, "metadata:\n    name: db\n", "metadata: &m\n    name: db\nother: *m\n", 1), "aliases are not supported"},
		{"dotenv", "", "only YAML, JSON and binary"},
	} {
		name := "s.yaml"
		if tc.name == "dotenv" {
			name = "s.env"
		}
		_, err := Decrypt(name, []byte(tc.data), key)
		if err == nil || !strings.Contains(err.Message, tc.want) || err.File != name {
			t.Errorf("%s: %v; want an error naming %s saying %q", tc.name, err, name, tc.want)
		}
		if err != nil && strings.Contains(err.Message, "hunter2") {
			t.Errorf("%s: the error quotes the secret: %v", tc.name, err)
		}
	}
}

// fuzzKey is a fixed identity, so that the fuzzer's worker processes open
// the seeds the coordinator encrypted (a test key, used nowhere else).
const (
	fuzzKey       = "AGE-SECRET-KEY-183RAD35YDU7GW5TV8GJXHDQQZR2MJ9TRH06X33DS5VQHC7F88KAS8P0CHY"
	fuzzRecipient = "age1v8d8ckl2xtyyma9qqa4e39prchgqd2zj4leq8e26ut0t4enxl4xs3w69m4"
)

func FuzzSOPSDecrypt(f *testing.F) {
	key, recipient := []byte(fuzzKey), fuzzRecipient
	f.Add("s.yaml", buildtest.EncryptYAML(f, []byte(plainSecret), recipient))
	f.Add("a.yaml", buildtest.Encrypt(f, "a.yaml", []byte(everyValue+secondDoc), buildtest.Rules{}, recipient))
	f.Add("a.json", buildtest.Encrypt(f, "a.json", []byte(`{"a":[1,{"b":2.5}],"c":true}`), buildtest.Rules{MACOnlyEncrypted: true}, recipient))
	f.Add("bin", buildtest.Encrypt(f, "bin", []byte("raw"), buildtest.Rules{}, recipient))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		plain, err := Decrypt(name, data, key)
		if err != nil {
			if err.File != name {
				t.Fatalf("error names %q, not %q", err.File, name)
			}
			return
		}
		if formatOf(name) == sopsBinary {
			return
		}
		// What opens is a document berth can read again.
		d := yaml.NewDecoder(bytes.NewReader(plain))
		for {
			var v any
			if err := d.Decode(&v); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("opened into a stream that does not parse: %v\n%s", err, plain)
			}
		}
	})
}
