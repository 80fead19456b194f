package build

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	"go.yaml.in/yaml/v3"

	"github.com/berth-dev/berth/api"
)

// The SOPS file format, read directly over filippo.io/age: the SOPS
// library's top-level package links its key service, and with it every
// cloud KMS SDK, which would double the size of the berth binary for a
// server that only ever opens files with age identities.
//
// A file encrypted by SOPS is the document with every value (or those its
// rules select) replaced by ENC[AES256_GCM,data:…,iv:…,tag:…,type:…],
// sealed with AES-256-GCM under one data key, with the value's path of
// keys joined by ":" (and a trailing ":") as additional data. The
// metadata under the top-level key "sops" holds the data key sealed for
// each age recipient (an armored age file), and the MAC: the SHA-512 of
// the values in document order, in upper-case hex, sealed the same way
// with the last-modified time as additional data.

// encMarker is in every value SOPS encrypts, its MAC included: a file
// without it is not encrypted, and is not parsed to find out.
var encMarker = []byte("ENC[AES256_GCM,")

// macOnlyEncryptedInit starts the hash of a file whose MAC covers only
// its encrypted values (mac_only_encrypted), as SOPS does, so that the
// two kinds of MAC never match.
var macOnlyEncryptedInit = []byte{0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0xb, 0xb, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69}

// sopsFormat is how a file is laid out, picked by its name as SOPS does.
type sopsFormat int

const (
	sopsYAML sopsFormat = iota
	sopsJSON
	// sopsBinary is any other file: SOPS wraps its bytes as the string
	// "data" of a JSON object.
	sopsBinary
	// sopsUnsupported are dotenv and INI files, which berth does not open.
	sopsUnsupported
)

func formatOf(name string) sopsFormat {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml":
		return sopsYAML
	case ".json":
		return sopsJSON
	case ".env", ".ini":
		return sopsUnsupported
	}
	return sopsBinary
}

// sopsAgeKey is one recipient's sealed copy of the data key.
type sopsAgeKey struct {
	Recipient string `yaml:"recipient"`
	Enc       string `yaml:"enc"`
}

// sopsMetadata is the part of a file's "sops" mapping berth reads.
type sopsMetadata struct {
	Age       []sopsAgeKey `yaml:"age"`
	KeyGroups []struct {
		Age []sopsAgeKey `yaml:"age"`
	} `yaml:"key_groups"`
	LastModified            string `yaml:"lastmodified"`
	MAC                     string `yaml:"mac"`
	UnencryptedSuffix       string `yaml:"unencrypted_suffix"`
	EncryptedSuffix         string `yaml:"encrypted_suffix"`
	UnencryptedRegex        string `yaml:"unencrypted_regex"`
	EncryptedRegex          string `yaml:"encrypted_regex"`
	UnencryptedCommentRegex string `yaml:"unencrypted_comment_regex"`
	EncryptedCommentRegex   string `yaml:"encrypted_comment_regex"`
	MACOnlyEncrypted        bool   `yaml:"mac_only_encrypted"`
	Version                 string `yaml:"version"`
}

// sopsFile is an encrypted file parsed: its documents' root mappings (nil
// for an empty document), the SOPS metadata taken out of them.
type sopsFile struct {
	format sopsFormat
	docs   []*yaml.Node
	meta   sopsMetadata
}

// Encrypted reports whether a file is encrypted with SOPS: its format
// (from its name, as SOPS picks it) holds SOPS's metadata.
func Encrypted(name string, data []byte) bool {
	if !bytes.Contains(data, encMarker) || !bytes.Contains(data, []byte("sops")) {
		return false
	}
	if formatOf(name) == sopsUnsupported {
		return true // so that Decrypt says it cannot open it
	}
	_, err := parseSOPS(name, data)
	return err == nil
}

// Decrypt opens a file encrypted with SOPS with the age identities in
// key, in memory, and checks its MAC. The error names the file and never
// holds its content.
func Decrypt(name string, data, key []byte) ([]byte, *api.Error) {
	if formatOf(name) == sopsUnsupported {
		return nil, fileError(name, "SOPS: only YAML, JSON and binary files can be opened, not %s files", strings.TrimPrefix(path.Ext(name), "."))
	}
	f, err := parseSOPS(name, data)
	if err != nil {
		return nil, fileError(name, "SOPS: %v", err)
	}
	if len(bytes.TrimSpace(key)) == 0 {
		return nil, fileError(name, "encrypted with SOPS, and the source has no decryption key")
	}
	ids, err := age.ParseIdentities(bytes.NewReader(key))
	if err != nil {
		return nil, fileError(name, "SOPS: the decryption key holds no age identity: %v", redact(err))
	}
	recips, err := f.recipients()
	if err != nil {
		return nil, fileError(name, "SOPS: %v", err)
	}
	dataKey := openDataKey(recips, ids)
	if dataKey == nil {
		return nil, fileError(name, "SOPS: the decryption key cannot open it (recipients: %s)", recipientList(recips))
	}
	if err := f.decrypt(dataKey); err != nil {
		return nil, fileError(name, "SOPS: %v", err)
	}
	plain, err := f.emit()
	if err != nil {
		return nil, fileError(name, "SOPS: %v", err)
	}
	return plain, nil
}

// parseSOPS reads a file of any supported format into documents and
// takes the metadata out, as SOPS's stores do: from the first document's
// "sops" key, dropping that key from every document.
func parseSOPS(name string, data []byte) (*sopsFile, error) {
	f := &sopsFile{format: formatOf(name)}
	var err error
	if f.format == sopsYAML {
		f.docs, err = yamlDocs(data)
	} else {
		var root *yaml.Node
		root, err = jsonDoc(data)
		f.docs = []*yaml.Node{root}
	}
	if err != nil {
		return nil, err
	}
	var meta *yaml.Node
	for i, doc := range f.docs {
		if doc == nil {
			continue
		}
		for j := 0; j < len(doc.Content); j += 2 {
			if doc.Content[j].Value != "sops" || doc.Content[j].Kind != yaml.ScalarNode {
				continue
			}
			if i == 0 {
				if meta != nil {
					return nil, errors.New("the file holds two \"sops\" entries")
				}
				meta = doc.Content[j+1]
			}
			doc.Content = append(doc.Content[:j], doc.Content[j+2:]...)
			j -= 2
		}
	}
	if meta == nil {
		return nil, errors.New("no SOPS metadata (a top-level \"sops\" key) in the first document")
	}
	if meta.Kind != yaml.MappingNode {
		return nil, errors.New("sops: the metadata is not a mapping")
	}
	if err := meta.Decode(&f.meta); err != nil {
		return nil, fmt.Errorf("sops: %v", err)
	}
	if f.meta.MAC == "" {
		return nil, errors.New("sops.mac: missing")
	}
	if f.format == sopsBinary {
		d := f.docs[0]
		if len(d.Content) != 2 || d.Content[0].Value != "data" || d.Content[1].Kind != yaml.ScalarNode {
			return nil, errors.New("a binary file must be a JSON object of \"data\" and \"sops\"")
		}
	}
	return f, nil
}

// yamlDocs parses a YAML stream into its documents' root mappings.
func yamlDocs(data []byte) ([]*yaml.Node, error) {
	var docs []*yaml.Node
	d := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := d.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %v", len(docs), err)
		}
		var root *yaml.Node
		if len(doc.Content) > 0 {
			root = doc.Content[0]
		}
		switch {
		case root == nil || root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null":
			root = nil
		case root.Kind != yaml.MappingNode:
			return nil, fmt.Errorf("document %d: not a mapping", len(docs))
		}
		docs = append(docs, root)
	}
	return docs, nil
}

// jsonDoc parses one JSON object into YAML nodes with explicit tags, so
// that one walk serves both formats.
func jsonDoc(data []byte) (*yaml.Node, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	n, err := jsonValue(d, 0)
	if err != nil {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, errors.New("not a JSON object")
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return n, nil
}

// maxDepth bounds the nesting a file may have.
const maxDepth = 1000

func jsonValue(d *json.Decoder, depth int) (*yaml.Node, error) {
	if depth > maxDepth {
		return nil, errors.New("JSON nested too deep")
	}
	tok, err := d.Token()
	if err != nil {
		return nil, fmt.Errorf("JSON: %v", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, fmt.Errorf("JSON: %v", err)
				}
				key, _ := k.(string)
				v, err := jsonValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
			}
			_, err := d.Token()
			return n, err
		case '[':
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for d.More() {
				v, err := jsonValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, v)
			}
			_, err := d.Token()
			return n, err
		}
		return nil, fmt.Errorf("JSON: unexpected %v", t)
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t}, nil
	case json.Number:
		if _, err := t.Int64(); err == nil {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: t.String()}, nil
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}, nil
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
}

// recipients are the age recipients the data key was sealed for.
func (f *sopsFile) recipients() ([]sopsAgeKey, error) {
	switch len(f.meta.KeyGroups) {
	case 0:
	case 1:
		return append(f.meta.Age, f.meta.KeyGroups[0].Age...), nil
	default:
		return nil, fmt.Errorf("sops.key_groups: %d groups (Shamir secret sharing) are not supported", len(f.meta.KeyGroups))
	}
	if len(f.meta.Age) == 0 {
		return nil, errors.New("sops: encrypted for no age recipient (berth opens age only)")
	}
	return f.meta.Age, nil
}

// openDataKey unseals the data key from the first recipient's copy the
// identities open; nil when none does.
func openDataKey(recips []sopsAgeKey, ids []age.Identity) []byte {
	for _, r := range recips {
		rd, err := age.Decrypt(armor.NewReader(strings.NewReader(r.Enc)), ids...)
		if err != nil {
			continue
		}
		key, err := io.ReadAll(io.LimitReader(rd, 64))
		if err == nil && len(key) == 32 {
			return key
		}
	}
	return nil
}

// rules say which values SOPS encrypted, from the metadata.
type rules struct {
	unencSuffix, encSuffix string
	unencRegex, encRegex   *regexp.Regexp
}

func (f *sopsFile) rules() (rules, error) {
	m := f.meta
	if m.UnencryptedCommentRegex != "" || m.EncryptedCommentRegex != "" {
		return rules{}, errors.New("sops: files encrypted by comment (unencrypted_comment_regex, encrypted_comment_regex) are not supported")
	}
	r := rules{unencSuffix: m.UnencryptedSuffix, encSuffix: m.EncryptedSuffix}
	var err error
	if m.UnencryptedRegex != "" {
		if r.unencRegex, err = regexp.Compile(m.UnencryptedRegex); err != nil {
			return r, fmt.Errorf("sops.unencrypted_regex: %v", err)
		}
	}
	if m.EncryptedRegex != "" {
		if r.encRegex, err = regexp.Compile(m.EncryptedRegex); err != nil {
			return r, fmt.Errorf("sops.encrypted_regex: %v", err)
		}
	}
	return r, nil
}

// encrypted says whether the value at path was encrypted, applying the
// rules in SOPS's order: each later rule that is set overrides.
func (r rules) encrypted(path []string) bool {
	enc := true
	anyKey := func(match func(string) bool) bool {
		for _, p := range path {
			if match(p) {
				return true
			}
		}
		return false
	}
	if r.unencSuffix != "" && anyKey(func(p string) bool { return strings.HasSuffix(p, r.unencSuffix) }) {
		enc = false
	}
	if r.encSuffix != "" {
		enc = anyKey(func(p string) bool { return strings.HasSuffix(p, r.encSuffix) })
	}
	if r.unencRegex != nil && anyKey(r.unencRegex.MatchString) {
		enc = false
	}
	if r.encRegex != nil {
		enc = anyKey(r.encRegex.MatchString)
	}
	return enc
}

// decrypt opens every encrypted value in place and checks the MAC.
func (f *sopsFile) decrypt(dataKey []byte) error {
	r, err := f.rules()
	if err != nil {
		return err
	}
	block, err := aes.NewCipher(dataKey)
	if err != nil {
		return err
	}
	hash := sha512.New()
	if f.meta.MACOnlyEncrypted {
		hash.Write(macOnlyEncryptedInit)
	}
	w := &walker{rules: r, block: block, hash: hash, macOnlyEncrypted: f.meta.MACOnlyEncrypted}
	for i, doc := range f.docs {
		if doc == nil {
			continue
		}
		if err := w.walk(doc, nil, 0); err != nil {
			if len(f.docs) > 1 {
				return fmt.Errorf("document %d: %w", i, err)
			}
			return err
		}
	}
	modified, err := time.Parse(time.RFC3339, f.meta.LastModified)
	if err != nil {
		return fmt.Errorf("sops.lastmodified: %v", err)
	}
	want, _, err := openValue(block, f.meta.MAC, modified.Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("sops.mac: cannot be read: %v", err)
	}
	if string(want) != fmt.Sprintf("%X", hash.Sum(nil)) {
		return errors.New("the content does not match its MAC: changed after it was encrypted")
	}
	return nil
}

// commentNode marks a list item that opened as a comment, to drop.
const commentNode yaml.Kind = 0

// walker decrypts values in document order, hashing them for the MAC.
type walker struct {
	rules            rules
	block            cipher.Block
	hash             io.Writer
	macOnlyEncrypted bool
}

func (w *walker) walk(n *yaml.Node, path []string, depth int) error {
	if depth > maxDepth {
		return errors.New("nested too deep")
	}
	// Comments are dropped: SOPS encrypts them too, and what reads the
	// plain text (berth's decoder, a build) has no use for them.
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			k.HeadComment, k.LineComment, k.FootComment = "", "", ""
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				return fmt.Errorf("%s: only string keys are supported", fieldPath(path))
			}
			v := n.Content[i+1]
			if err := w.walk(v, append(path[:len(path):len(path)], k.Value), depth+1); err != nil {
				return err
			}
			if v.Kind == commentNode {
				return fmt.Errorf("%s: a comment where a value belongs", fieldPath(append(path, k.Value)))
			}
		}
	case yaml.SequenceNode:
		items := n.Content[:0]
		for _, item := range n.Content {
			if err := w.walk(item, path, depth+1); err != nil {
				return err
			}
			if item.Kind != commentNode {
				items = append(items, item)
			}
		}
		n.Content = items
	case yaml.ScalarNode:
		if err := w.leaf(n, path); err != nil {
			return err
		}

	case yaml.AliasNode:
		return fmt.Errorf("%s: YAML aliases are not supported", fieldPath(path))
	}
	return nil
}

// leaf opens one value (if its path says it was encrypted) and adds it
// to the MAC as SOPS renders values to bytes.
func (w *walker) leaf(n *yaml.Node, path []string) error {
	if n.ShortTag() == "!!null" {
		return nil // SOPS neither encrypts nor hashes a null
	}
	enc := w.rules.encrypted(path)
	if !enc {
		if w.macOnlyEncrypted {
			return nil
		}
		b, err := macBytes(n)
		if err != nil {
			return fmt.Errorf("%s: %v", fieldPath(path), err)
		}
		w.hash.Write(b)
		return nil
	}
	if n.ShortTag() != "!!str" {
		return fmt.Errorf("%s: expected an encrypted value, found a %s", fieldPath(path), strings.TrimPrefix(n.ShortTag(), "!!"))
	}
	if n.Value == "" {
		return nil // SOPS leaves an empty string as it is
	}
	plain, typ, err := openValue(w.block, n.Value, strings.Join(path, ":")+":")
	if err != nil {
		return fmt.Errorf("%s: %v", fieldPath(path), err)
	}
	n.Style = 0
	switch typ {
	case "str", "bytes":
		n.Tag, n.Value = "!!str", string(plain)
		if strings.Contains(n.Value, "\n") {
			n.Style = yaml.LiteralStyle
		}
	case "int":
		i, err := strconv.Atoi(string(plain))
		if err != nil {
			return fmt.Errorf("%s: an int that is not one", fieldPath(path))
		}
		n.Tag, n.Value = "!!int", strconv.Itoa(i)
	case "float":
		f, err := strconv.ParseFloat(string(plain), 64)
		if err != nil {
			return fmt.Errorf("%s: a float that is not one", fieldPath(path))
		}
		n.Tag, n.Value = "!!float", strconv.FormatFloat(f, 'f', -1, 64)
	case "bool":
		b, err := strconv.ParseBool(string(plain))
		if err != nil {
			return fmt.Errorf("%s: a bool that is not one", fieldPath(path))
		}
		n.Tag, n.Value = "!!bool", strconv.FormatBool(b)
		plain = []byte(map[bool]string{true: "True", false: "False"}[b])
	case "time":
		var t time.Time
		if err := t.UnmarshalText(plain); err != nil {
			return fmt.Errorf("%s: a time that is not one", fieldPath(path))
		}
		n.Tag, n.Value = "!!timestamp", t.Format(time.RFC3339Nano)
		plain, _ = t.MarshalText()
	case "comment":
		// A comment in a list is an item of it in SOPS's tree: it is
		// dropped, and not hashed.
		n.Kind = commentNode
		return nil
	default:
		return fmt.Errorf("%s: values of type %q are not supported", fieldPath(path), typ)
	}
	w.hash.Write(plain)
	return nil
}

// macBytes renders a value left in the clear as SOPS does for its MAC:
// as the YAML (or JSON) decoder types it.
func macBytes(n *yaml.Node) ([]byte, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case string:
		return []byte(v), nil
	case int:
		return []byte(strconv.Itoa(v)), nil
	case float64:
		return []byte(strconv.FormatFloat(v, 'f', -1, 64)), nil
	case bool:
		if v {
			return []byte("True"), nil
		}
		return []byte("False"), nil
	case time.Time:
		return v.MarshalText()
	case []byte:
		return v, nil
	}
	return nil, fmt.Errorf("a value of type %T cannot be hashed", v)
}

var encValue = regexp.MustCompile(`^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]`)

// openValue opens one ENC[…] value with its additional data.
func openValue(block cipher.Block, value, additional string) (plain []byte, typ string, err error) {
	m := encValue.FindStringSubmatch(value)
	if m == nil {
		return nil, "", errors.New("not a value encrypted by SOPS")
	}
	var parts [3][]byte
	for i := range parts {
		if parts[i], err = base64.StdEncoding.DecodeString(m[i+1]); err != nil {
			return nil, "", errors.New("not a value encrypted by SOPS: bad base64")
		}
	}
	data, iv, tag := parts[0], parts[1], parts[2]
	if len(iv) == 0 || len(tag) != 16 {
		return nil, "", errors.New("not a value encrypted by SOPS: bad iv or tag")
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(iv))
	if err != nil {
		return nil, "", err
	}
	plain, err = gcm.Open(nil, iv, append(data, tag...), []byte(additional))
	if err != nil {
		return nil, "", errors.New("cannot be opened with the data key: changed after it was encrypted, or moved to another key")
	}
	return plain, m[4], nil
}

// fieldPath names a value by its keys, as berth's errors name fields.
func fieldPath(path []string) string {
	if len(path) == 0 {
		return "(top level)"
	}
	return strings.Join(path, ".")
}

// emit writes the opened documents in the file's own format.
func (f *sopsFile) emit() ([]byte, error) {
	var out bytes.Buffer
	switch f.format {
	case sopsBinary:
		return []byte(f.docs[0].Content[1].Value), nil
	case sopsJSON:
		if err := writeJSON(&out, f.docs[0], 0); err != nil {
			return nil, err
		}
		out.WriteByte('\n')
		return out.Bytes(), nil
	}
	for i, doc := range f.docs {
		if i > 0 {
			out.WriteString("---\n")
		}
		if doc == nil || len(doc.Content) == 0 {
			if doc != nil {
				out.WriteString("{}\n")
			}
			continue
		}
		e := yaml.NewEncoder(&out)
		e.SetIndent(2)
		if err := e.Encode(doc); err != nil {
			return nil, err
		}
		if err := e.Close(); err != nil {
			return nil, err
		}
	}
	return out.Bytes(), nil
}

// writeJSON writes nodes made by jsonDoc (and opened by the walker) as
// JSON, keeping the order of keys.
func writeJSON(w *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > maxDepth {
		return errors.New("nested too deep")
	}
	switch n.Kind {
	case yaml.MappingNode:
		w.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				w.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			w.Write(k)
			w.WriteByte(':')
			if err := writeJSON(w, n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
		w.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		w.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeJSON(w, item, depth+1); err != nil {
				return err
			}
		}
		w.WriteByte(']')
		return nil
	}
	switch n.ShortTag() {
	case "!!int", "!!bool", "!!null":
		w.WriteString(n.Value)
	case "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%q is not a JSON number", n.Value)
		}
		w.WriteString(n.Value)
	default:
		b, _ := json.Marshal(n.Value)
		w.Write(b)
	}
	return nil
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

// recipientList lists the age recipients a file was encrypted for, to
// say which key it wants.
func recipientList(recips []sopsAgeKey) string {
	var names []string
	for _, r := range recips {
		names = append(names, r.Recipient)
	}
	if len(names) == 0 {
		return "none of age"
	}
	return strings.Join(names, ", ")
}

// redact keeps an identity parse error from quoting the key.
func redact(err error) error {
	if strings.Contains(err.Error(), "AGE-SECRET-KEY") {
		return errors.New("malformed identity")
	}
	return err
}
