package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// DecodeOptions changes what the decoder accepts for one kind of caller.
//
// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type DecodeOptions struct {
	// DropStatus removes `status` from every object before it is decoded.
	// Manifests from sources and `berth validate` describe desired state: a
	// status copied from `kubectl get -o yaml` must neither fail them nor
	// overwrite what controllers observed. The API keeps it (status
	// subresource writes need it).
	DropStatus bool
	// FieldValidation is what unknown and duplicate fields are, as the
	// API's fieldValidation parameter names it: errors with Strict (also
	// the zero value, what sources and `berth validate` use), warnings on
	// the object with Warn, nothing with Ignore. An unknown field is then
	// dropped and of a duplicate the last value kept, as Kubernetes does.
	// Values of the wrong type and unknown kinds are errors whatever it is.
	FieldValidation string
	// ValidateRest also validates a document that has values of the wrong
	// type (and no other decode error): the values that decoded are
	// defaulted and validated, and their errors reported with the decode
	// errors (see validateRest), so
	// that the user sees every error of the document in one go. Sources
	// and the CLI set it: they default and validate every object as it
	// is. The API does not: it validates per verb, after its own defaults
	// and admission, which the decoder cannot stand in for.
	ValidateRest bool
	// Kinds resolves a kind the registry does not know before it is an
	// error: `berth validate` gives an UncheckedKind for the kinds of
	// groups berth does not serve, custom resources whose CRD the tree
	// may hold. Such a document decodes as a generic object.
	Kinds func(schema.GroupVersionKind) *Kind
}

// Decoded is one object of a stream together with where it came from, so
// that errors found later (validation, duplicates, ownership) can still
// name the file, document, line and field.
//
// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type Decoded struct {
	// Object is the decoded object, of the Go type its kind registered.
	Object Object
	// File is the name the stream was decoded under.
	File string
	// Doc is the 0-based index of the object's document in File, counting
	// only documents that hold something.
	Doc int
	// Line is the line of File where the object starts, 0 when unknown.
	Line int
	// Field is the path of the object inside its document: empty when the
	// document is the object, "items[2]" for an item of a List.
	Field string
	// Warnings are the unknown and duplicate fields the decoder let pass
	// with metav1.FieldValidationWarn, in Kubernetes' words: `unknown field
	// "spec.foo"`, `duplicate field "metadata.name"`.
	Warnings []string

	// kind is the kind the decoder resolved.
	kind *Kind
	pos  positions
}

// Kind is the kind the object was decoded as: an UncheckedKind for a
// document DecodeOptions.Kinds resolved.
func (d *Decoded) Kind() *Kind {
	if d.kind != nil {
		return d.kind
	}
	return KindOf(d.Object)
}

// UncheckedKind is the kind of custom resources whose CRD is not at hand:
// decoded as generic objects, neither defaulted nor validated, until the
// caller finds their CRD (DefaultAndValidateAs).
func UncheckedKind(gvk schema.GroupVersionKind) *Kind {
	return &Kind{GVK: gvk, Custom: true, typ: unstructuredType}
}

// UncheckedCustomKind resolves, for DecodeOptions.Kinds, a kind of a
// group berth does not serve as a custom resource to check once its CRD
// is found (an UncheckedKind). Groups of Kubernetes' own (k8s.io) and
// berth's are not: a kind there that berth does not serve stays an
// error, as does a kind of no group.
func UncheckedCustomKind(gvk schema.GroupVersionKind) *Kind {
	if !CustomGroup(gvk.Group) {
		return nil
	}
	return UncheckedKind(gvk)
}

// CustomGroup reports whether a group may hold custom resources: not a
// group of Kubernetes' own (k8s.io), nor one berth serves built in, nor
// no group.
func CustomGroup(g string) bool {
	if !strings.Contains(g, ".") || g == "k8s.io" || strings.HasSuffix(g, ".k8s.io") {
		return false
	}
	return !slices.ContainsFunc(kinds, func(k *Kind) bool { return k.GVK.Group == g })
}

// DefaultAndValidateAs is DefaultAndValidate of a custom resource as an
// object of k, a kind the registry need not hold (CustomKindOf of a CRD
// found beside it): its metadata defaulted and validated for the CRD's
// scope. The CRD's schema is package crd's to check.
func (d *Decoded) DefaultAndValidateAs(k *Kind) ErrorList {
	return d.DefaultAndValidateObjectAs(d.Object, k)
}

// DefaultAndValidateObjectAs is DefaultAndValidateAs of obj, a copy of
// the decoded object that the caller may change (the decoded one is
// shared with a source's decode cache); the errors are placed in d's file.
func (d *Decoded) DefaultAndValidateObjectAs(obj Object, k *Kind) ErrorList {
	defaultAs(obj, k)
	return d.Errors(validateAs(obj, k))
}

// ErrorAt places a message about the field at path (relative to the
// object) in the object's file.
func (d *Decoded) ErrorAt(path, msg string) *Error { return d.errorAt(path, msg) }

// DecodeStream decodes every object of a YAML or JSON stream: YAML
// documents separated by "---" lines, one JSON object, or JSON objects one
// after another. It is the one decoder behind every source, the API server
// and `berth validate`, so a manifest means the same thing everywhere.
//
// Empty documents and documents of only comments are skipped. A `kind: List`
// document (apiVersion v1) yields each of its items. Every document is
// decoded strictly into the Go type of its kind: unknown and duplicate
// fields, values of the wrong type, missing or unknown kinds are all
// errors (unknown and duplicate fields only warnings, or nothing, when
// opts.FieldValidation says so), each naming the file (name), the
// document, the line where it can and the field path. Decoding goes on
// after an error, so the list holds
// every problem of every document; only documents without errors yield an
// object. DecodeStream never panics, whatever data holds.
func DecodeStream(name string, data []byte, opts DecodeOptions) ([]*Decoded, ErrorList) {
	s := &streamDecoder{name: name, opts: opts}
	// Decoded objects keep their document's text for LineOf: a copy, so
	// that a caller may reuse its buffer.
	data = normalizeNewlines(bytes.Clone(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	if !s.jsonStream(data) {
		for _, d := range splitYAML(data) {
			s.yamlDocument(d)
		}
	}
	s.errs.Sort()
	return s.objs, s.errs
}

// DecodeObject decodes a stream that must hold exactly one object, as an
// API request body does. Its errors carry no file name.
func DecodeObject(data []byte, opts DecodeOptions) (Object, ErrorList) {
	objs, errs := DecodeStream("", data, opts)
	if len(errs) > 0 {
		return nil, errs
	}
	if len(objs) != 1 {
		return nil, ErrorList{{Doc: 0, Message: fmt.Sprintf("expected one object, found %d", len(objs))}}
	}
	return objs[0].Object, nil
}

// LineOf returns the line of File that holds the field at path (as
// field.Path renders it, relative to the object), or the line of the
// nearest enclosing field that the manifest has; 0 when unknown.
func (d *Decoded) LineOf(path string) int {
	if l := d.pos.line(path); l > 0 {
		return l
	}
	return d.Line
}

// Location renders where the object is, as "file:doc N (line L)".
func (d *Decoded) Location() string {
	return location(d.File, d.Doc, d.Line)
}

// Errors places field errors about the object (from Validate, or from any
// later check) in its file, so that every error a user sees says where.
func (d *Decoded) Errors(errs field.ErrorList) ErrorList {
	out := make(ErrorList, 0, len(errs))
	for _, fe := range errs {
		path := fe.Field
		if path == "<nil>" {
			path = ""
		}
		out = append(out, d.errorAt(path, oneLine(fe.ErrorBody())))
	}
	return out
}

// DefaultAndValidate applies Kubernetes defaults to the object and
// validates it, returning every error placed in the file. It is what a
// source and `berth validate` do with each decoded object.
func (d *Decoded) DefaultAndValidate() ErrorList {
	Default(d.Object)
	return d.Errors(Validate(d.Object))
}

func (d *Decoded) errorAt(path, msg string) *Error {
	e := &Error{
		File:    d.File,
		Doc:     d.Doc,
		Line:    d.LineOf(path),
		Field:   joinPath(d.Field, path),
		Message: msg,
	}
	if d.Object != nil {
		if k := d.Kind(); k != nil {
			e.Kind = k.GVK.Kind
		}
		e.Namespace = d.Object.GetNamespace()
		e.Name = d.Object.GetName()
	}
	return e
}

// joinPath appends a path relative to an object to the object's own path
// in its document.
func joinPath(prefix, path string) string {
	switch {
	case prefix == "":
		return path
	case path == "":
		return prefix
	case strings.HasPrefix(path, "["):
		return prefix + path
	}
	return prefix + "." + path
}

// +kubebuilder:object:generate=false
type streamDecoder struct {
	name string
	opts DecodeOptions
	docs int
	objs []*Decoded
	errs ErrorList
}

// document is one YAML or JSON document of a stream.
//
// +kubebuilder:object:generate=false
type document struct {
	data []byte
	line int // line of the stream where data starts
}

// nextDoc numbers a document that holds something.
func (s *streamDecoder) nextDoc() int {
	s.docs++
	return s.docs - 1
}

// jsonStream decodes data as a stream of JSON objects when it starts with
// "{". It reports false, having decoded nothing, when data is better read
// as YAML: the first value is not JSON (a YAML flow mapping), or a later
// one fails where a "---" line shows the stream is YAML after all.
func (s *streamDecoder) jsonStream(data []byte) bool {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return false
	}
	type value struct {
		raw  []byte
		line int
	}
	var values []value
	lines := lineCounter{data: data}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		start := int(dec.InputOffset())
		for start < len(data) && isJSONSpace(data[start]) {
			start++
		}
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		if err != nil {
			if len(values) == 0 || hasYAMLSeparator(data) {
				return false
			}
			for _, v := range values {
				s.jsonDocument(v.raw, v.line)
			}
			line := lines.at(start)
			if off, ok := jsonErrorOffset(err); ok {
				line = lines.at(off)
			}
			s.errs = append(s.errs, &Error{File: s.name, Doc: s.nextDoc(), Line: line, Message: "invalid JSON: " + oneLine(err.Error())})
			return true
		}
		values = append(values, value{raw: raw, line: lines.at(start)})
	}
	for _, v := range values {
		s.jsonDocument(v.raw, v.line)
	}
	return true
}

// normalizeNewlines turns CRLF and lone CR line breaks into LF, as YAML
// itself does, so that lines are counted the way the parsers count them.
func normalizeNewlines(data []byte) []byte {
	if bytes.IndexByte(data, '\r') < 0 {
		return data
	}
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(data, []byte("\r"), []byte("\n"))
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func jsonErrorOffset(err error) (int, bool) {
	if ok, off := sjson.SyntaxErrorOffset(err); ok {
		return int(off), true
	}
	return 0, false
}

// lineCounter turns byte offsets into 1-based lines, for offsets that only
// grow.
//
// +kubebuilder:object:generate=false
type lineCounter struct {
	data []byte
	off  int
	line int
}

func (c *lineCounter) at(off int) int {
	if c.line == 0 {
		c.line = 1
	}
	off = min(max(off, 0), len(c.data))
	if off < c.off {
		c.off, c.line = 0, 1
	}
	c.line += bytes.Count(c.data[c.off:off], []byte("\n"))
	c.off = off
	return c.line
}

func hasYAMLSeparator(data []byte) bool {
	for line := range bytes.Lines(data) {
		if _, ok := separator(bytes.TrimRight(line, "\r\n")); ok {
			return true
		}
	}
	return false
}

// splitYAML cuts a YAML stream into documents at "---" and "..." lines, as
// Kubernetes' YAML reader does, keeping the line each starts on. Content
// after "--- " on the same line belongs to the next document.
func splitYAML(data []byte) []document {
	var docs []document
	var cur document
	var buf []byte // the document's text when it started with content after "---"
	cur.line = 1
	start := 0
	lineNo := 0
	flush := func(end int) {
		if buf != nil {
			cur.data = append(buf, data[start:end]...)
		} else {
			cur.data = data[start:end]
		}
		docs = append(docs, cur)
	}
	for off := 0; off < len(data); {
		lineNo++
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end < 0 {
			end = len(data)
		} else {
			end += off
			next = end + 1
		}
		rest, ok := separator(bytes.TrimRight(data[off:end], "\r"))
		if ok {
			flush(off)
			cur = document{line: lineNo}
			buf = nil
			if len(rest) > 0 {
				buf = append(append([]byte{}, rest...), '\n')
			} else {
				cur.line = lineNo + 1
			}
			start = next
		}
		off = next
	}
	flush(len(data))
	return docs
}

// separator reports whether line ends a document and returns what follows
// the marker when it is content rather than a comment.
func separator(line []byte) ([]byte, bool) {
	if !bytes.HasPrefix(line, []byte("---")) && !bytes.HasPrefix(line, []byte("...")) {
		return nil, false
	}
	rest := line[3:]
	if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' {
		return nil, false
	}
	rest = bytes.TrimSpace(rest)
	if len(rest) == 0 || rest[0] == '#' || line[0] == '.' {
		return nil, true
	}
	return rest, true
}

// blank reports whether a YAML document holds only blank lines, comments
// and directives.
func blank(data []byte) bool {
	for line := range bytes.Lines(data) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && t[0] != '%' {
			return false
		}
	}
	return true
}

func (s *streamDecoder) yamlDocument(d document) {
	if blank(d.data) {
		return
	}
	doc := -1
	defer s.recoverDocument(&doc, d.line)
	// A document whose keys are all plain is converted strictly, which
	// fails on a duplicate key: without one, its node tree is not needed
	// until an error needs a line. Anything else (a duplicate, a quoted or
	// tagged key whose text may equal another key's, an error) takes the
	// node tree, which finds duplicates as the text spells them and places
	// the error.
	plain := plainKeys(d.data)
	var j []byte
	var err error
	if plain {
		j, err = yamlToJSON(d.data, true)
	}
	if !plain || err != nil {
		j, err = yamlToJSON(d.data, false)
		plain = false
	}
	pos := newPositions(d.data, d.line)
	if err != nil {
		// Both parsers number lines oddly; go.yaml.in/yaml/v3 points at
		// where the broken construct started, which is what a user needs.
		if _, nodeErr := parseNodes(d.data); nodeErr != nil {
			err = nodeErr
		}
		line, msg := yamlErrorLine(err.Error(), d.line)
		// A parser error at the end of input can name the line after it.
		last := d.line + bytes.Count(bytes.TrimRight(d.data, "\r\n"), []byte("\n"))
		line = min(max(line, d.line), last)
		doc = s.nextDoc()
		s.errs = append(s.errs, &Error{File: s.name, Doc: doc, Line: line, Message: "invalid YAML: " + msg})
		return
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return // a document of only "~", "null" or directives
	}
	doc = s.nextDoc()
	pos.noDuplicates = plain
	s.object(j, pos, doc, d.line, "", 0)
}

// plainKeys reports whether every mapping key of a YAML document is a
// plain scalar, as far as its text shows: no line starts (after its
// indentation and "- " markers) with a quote, a tag, an anchor, an alias
// or "?", and every flow mapping is a value (or item) that opens and
// closes on one line with only plain keys in it (plainFlow). Two plain
// keys spelt the same are the same key to every YAML parser, so the
// strict conversion finds exactly the duplicates the node tree would. It
// may say false for a document whose keys are all plain.
func plainKeys(data []byte) bool {
	for l := range bytes.Lines(data) {
		t := bytes.TrimLeft(l, " \t")
		for len(t) > 0 && t[0] == '-' && (len(t) == 1 || t[1] == ' ' || t[1] == '\t' || t[1] == '\n') {
			t = bytes.TrimLeft(t[1:], " \t")
		}
		if len(t) == 0 {
			continue
		}
		switch t[0] {
		case '"', '\'', '!', '&', '*', '?', '<':
			return false
		}
		if bytes.IndexByte(t, '{') >= 0 && !plainFlowValue(t) {
			return false
		}
	}
	return true
}

// plainFlowValue reports whether a line holding a '{' (after its
// indentation and "- " markers) is a flow collection, or a plain key and
// ": " followed by one, that plainFlow accepts. A brace anywhere else (in
// a scalar, a comment, a key) says no.
func plainFlowValue(t []byte) bool {
	if t[0] != '{' && t[0] != '[' {
		k := bytes.Index(t, []byte(": "))
		if tab := bytes.Index(t, []byte(":\t")); tab >= 0 && (k < 0 || tab < k) {
			k = tab
		}
		if k < 0 || bytes.ContainsAny(t[:k], "{[") {
			return false
		}
		t = bytes.TrimLeft(t[k+1:], " \t")
		if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
			return false
		}
	}
	return plainFlow(t)
}

// plainFlow reports whether v, which starts with '{' or '[', is one flow
// collection closed on its line and followed by nothing but blanks, whose
// mapping keys are all plain scalars. It follows the flow's grammar just
// enough to know where each scalar starts: a quote there opens a quoted
// scalar (skipped whole; as a mapping key it says no), anywhere else it is
// a character of a plain one. Outside quoted scalars a tag, anchor, alias,
// comment, explicit key or merge key says no, as does a key that is empty,
// a collection, or starts with "- ".
func plainFlow(v []byte) bool {
	const (
		key        = iota // where a mapping key starts
		plainKey          // in a plain mapping key
		value             // after a key's ": "
		item              // where a sequence item starts
		plainValue        // in a plain value or item
		after             // after a quoted scalar or a closed collection
	)
	var open []byte // the brackets not yet closed
	state, first := item, false
	blank := func(c byte) bool { return c == ' ' || c == '\t' }
	colon := func(i int) bool { return v[i] == ':' && i+1 < len(v) && blank(v[i+1]) }
	for i := 0; i < len(v); i++ {
		c := v[i]
		if strings.IndexByte("!&*?|>%@`#<\r\n", c) >= 0 {
			return false
		}
		if blank(c) && state != plainKey && state != plainValue {
			continue
		}
		if (c == '"' || c == '\'') && state != plainKey && state != plainValue {
			if state != value && state != item {
				return false // a quoted key, or a quote after a scalar
			}
			if i = skipQuoted(v, i); i < 0 {
				return false
			}
			state, first = after, false
			continue
		}
		switch c {
		case '{', '[':
			if state != value && state != item {
				return false // a collection as a key, or inside a scalar
			}
			open = append(open, c)
			state, first = item, true
			if c == '{' {
				state = key
			}
			continue
		case '}', ']':
			want := byte('{')
			if c == ']' {
				want = '['
			}
			empty := first && (state == key || state == item)
			if len(open) == 0 || open[len(open)-1] != want ||
				((state == key || state == item || state == value) && !empty) {
				return false // mismatched, or an empty key, item or value
			}
			open = open[:len(open)-1]
			if len(open) == 0 {
				return len(bytes.TrimSpace(v[i+1:])) == 0
			}
			state, first = after, false
			continue
		case ',':
			if state == key || state == item || state == value {
				return false // an empty key, item or value
			}
			state, first = item, false
			if open[len(open)-1] == '{' {
				state = key
			}
			continue
		}
		first = false
		switch state {
		case key:
			if c == ':' || c == '-' && i+1 < len(v) && blank(v[i+1]) {
				return false
			}
			state = plainKey
		case plainKey:
			if colon(i) {
				state = value
			}
		case value, item:
			if c == '-' && i+1 < len(v) && blank(v[i+1]) {
				return false
			}
			state = plainValue
			if colon(i) {
				return false
			}
		case plainValue:
			if colon(i) {
				if open[len(open)-1] != '[' {
					return false // ": " in a mapping's value
				}
				state = value // a single-pair mapping as an item
			}
		case after:
			if !colon(i) || open[len(open)-1] != '[' {
				return false
			}
			state = value // a single pair whose key is quoted: it cannot repeat
		}
	}
	return false // not closed on this line
}

// skipQuoted returns the index of the quote that closes the quoted scalar
// opened at v[i], or -1 when it does not close on the line.
func skipQuoted(v []byte, i int) int {
	q := v[i]
	for j := i + 1; j < len(v); j++ {
		switch {
		case v[j] == '\n' || v[j] == '\r':
			return -1
		case q == '"' && v[j] == '\\':
			j++
		case v[j] == q && q == '\'' && j+1 < len(v) && v[j+1] == '\'':
			j++
		case v[j] == q:
			return j
		}
	}
	return -1
}

// yamlToJSON converts with sigs.k8s.io/yaml, as Kubernetes does (YAML 1.1:
// unquoted yes/no are booleans), turning a panic of the YAML parser into an
// error. With strict, a duplicate key is an error.
func yamlToJSON(data []byte, strict bool) (j []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML parser failed: %v", r)
		}
	}()
	if strict {
		return yaml.YAMLToJSONStrict(data)
	}
	return yaml.YAMLToJSON(data)
}

func (s *streamDecoder) jsonDocument(raw []byte, line int) {
	doc := s.nextDoc()
	defer s.recoverDocument(&doc, line)
	pos := newPositions(raw, line)
	pos.rootLine = line // raw starts with the object's "{"
	pos.noDuplicates = !jsonMayRepeatKeys(raw)
	s.object(raw, pos, doc, line, "", 0)
}

// jsonMayRepeatKeys tells, with one JSON pass, whether a document may
// repeat a key; only then is its YAML node tree built to say where. API
// request bodies are JSON, and building that tree for each was a sixth of
// the server's CPU under load.
func jsonMayRepeatKeys(raw []byte) bool {
	var v any
	strictErrs, err := sjson.UnmarshalStrict(raw, &v, sjson.DisallowDuplicateFields)
	return err != nil || len(strictErrs) > 0
}

// recoverDocument turns a panic while decoding one document into an error
// about that document, so one bad document cannot take down a server or
// hide the others. The fuzz test fails on any such error.
func (s *streamDecoder) recoverDocument(doc *int, line int) {
	r := recover()
	if r == nil {
		return
	}
	if *doc < 0 {
		*doc = s.nextDoc()
	}
	s.errs = append(s.errs, &Error{File: s.name, Doc: *doc, Line: line, Message: fmt.Sprintf("internal error decoding the document: %v", r)})
}

// yamlErrorLine finds "line N" in a YAML parser message, which counts from
// the start of the document, and rewrites it as a line of the stream. It
// returns that line and the message without a leading "yaml: line N: ".
// The YAML parsers count from 0 for parser errors ("did not find expected
// …") and from 1 for scanner errors; both become lines counted from 1.
func yamlErrorLine(msg string, base int) (int, string) {
	msg = oneLine(msg)
	if strings.Contains(msg, "did not find expected") {
		base++
	}
	first := 0
	var b strings.Builder
	rest := msg
	for {
		i := strings.Index(rest, "line ")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		j := i + len("line ")
		k := j
		for k < len(rest) && rest[k] >= '0' && rest[k] <= '9' {
			k++
		}
		n, err := strconv.Atoi(rest[j:k])
		if k == j || err != nil {
			b.WriteString(rest[:j])
			rest = rest[j:]
			continue
		}
		abs := base + n - 1
		if first == 0 {
			first = abs
		}
		b.WriteString(rest[:j])
		b.WriteString(strconv.Itoa(abs))
		rest = rest[k:]
	}
	out := b.String()
	if first > 0 {
		out = strings.TrimPrefix(out, fmt.Sprintf("yaml: line %d: ", first))
	}
	return first, out
}

// head is what the decoder reads of a document before it knows its kind;
// it is read leniently, to name the object in errors even when the rest
// is wrong.
//
// +kubebuilder:object:generate=false
type head struct {
	fields     map[string]json.RawMessage
	apiVersion string
	kind       string
	name       string
	namespace  string
}

func readHead(data []byte) (*head, error) {
	h := &head{}
	if err := json.Unmarshal(data, &h.fields); err != nil || h.fields == nil {
		return nil, fmt.Errorf("expected an object with apiVersion and kind, got %s", describeRaw(data))
	}
	_ = json.Unmarshal(h.fields["apiVersion"], &h.apiVersion)
	_ = json.Unmarshal(h.fields["kind"], &h.kind)
	var meta struct {
		Name      any `json:"name"`
		Namespace any `json:"namespace"`
	}
	_ = json.Unmarshal(h.fields["metadata"], &meta)
	h.name, _ = meta.Name.(string)
	h.namespace, _ = meta.Namespace.(string)
	return h, nil
}

func describeRaw(data []byte) string {
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// object decodes one object (a document, or an item of a List) of the
// stream.
func (s *streamDecoder) object(data []byte, pos positions, doc, docLine int, prefix string, depth int) {
	line := pos.line("")
	if line == 0 {
		line = docLine
	}
	d := &Decoded{File: s.name, Doc: doc, Line: line, Field: prefix, pos: pos}
	h, err := readHead(data)
	if err != nil {
		s.errs = append(s.errs, d.errorAt("", err.Error()))
		return
	}
	var errs ErrorList
	problem := func(path, msg string) {
		e := d.errorAt(path, msg)
		e.Kind, e.Namespace, e.Name = h.kind, h.namespace, h.name
		errs = append(errs, e)
	}
	defer func() { s.errs = append(s.errs, errs...) }()
	// unknownOrDuplicate is an unknown or duplicate field (what: "unknown" or
	// "duplicate"), which FieldValidation may turn into a warning.
	var warnings []string
	// hides: an unknown or duplicate field is an error, which may hide a
	// field (a misspelt image leaves image empty), so the rest of the
	// document is not validated, lest the typo cascade.
	var hides bool
	// failed are the fields of the wrong type, for ValidateRest.
	var failed []string
	unknownOrDuplicate := func(what, path, msg string, line int) {
		switch s.opts.FieldValidation {
		case metav1.FieldValidationIgnore:
		case metav1.FieldValidationWarn:
			warnings = append(warnings, fmt.Sprintf("%s field %q", what, joinPath(d.Field, path)))
		default:
			hides = true
			problem(path, msg)
			if line > 0 {
				errs[len(errs)-1].Line = line
			}
		}
	}

	for _, f := range []string{"apiVersion", "kind"} {
		if raw, ok := h.fields[f]; ok {
			var v any
			if json.Unmarshal(raw, &v) == nil {
				if _, isString := v.(string); !isString && v != nil {
					problem(f, fmt.Sprintf("Invalid type: expected string, got %s", describeRaw(raw)))
					return
				}
			}
		}
	}
	if h.kind == "List" && (h.apiVersion == "v1" || h.apiVersion == "") {
		s.list(h, data, pos, doc, docLine, prefix, depth, problem)
		return
	}
	kind, kindProblems := resolveKind(h.apiVersion, h.kind)
	if kind == nil && s.opts.Kinds != nil && h.kind != "" {
		if gv, err := schema.ParseGroupVersion(h.apiVersion); err == nil && h.apiVersion != "" {
			if k := s.opts.Kinds(gv.WithKind(h.kind)); k != nil {
				kind, kindProblems = k, nil
			}
		}
	}
	for _, p := range kindProblems {
		problem(p.path, p.message)
	}
	if kind == nil {
		return
	}
	h.kind = kind.GVK.Kind
	if kind.Custom {
		// A custom resource has no Go type to decode strictly into: its
		// CRD's schema checks it where the CRD is at hand (the API
		// server), and here it is only required to be an object.
		obj, err := decodeCustom(data, s.opts.DropStatus)
		if err != nil {
			problem("", err.Error())
			return
		}
		d.Object, d.kind = obj, kind
		s.objs = append(s.objs, d)
		return
	}

	skip := map[string]bool{"status": s.opts.DropStatus}
	var dups []duplicateKey
	hasTree := true // a document without duplicate keys needs no other check
	if !pos.noDuplicates {
		dups, hasTree = pos.duplicateKeys(kind.typ, skip)
	}
	for _, dup := range dups {
		unknownOrDuplicate("duplicate", dup.path, fmt.Sprintf("duplicate field %q (first set on line %d)", dup.name, dup.first), dup.line)
	}

	body := data
	if _, ok := h.fields["status"]; ok && s.opts.DropStatus {
		delete(h.fields, "status")
		if body, err = json.Marshal(h.fields); err != nil {
			problem("", "cannot re-encode the document without status: "+err.Error())
			return
		}
	}

	obj := kind.New()
	strict := []sjson.StrictOption{sjson.DisallowUnknownFields}
	if !hasTree {
		strict = append(strict, sjson.DisallowDuplicateFields)
	}
	strictErrs, err := sjson.UnmarshalStrict(body, obj, strict...)
	if err != nil {
		problems := typeCheck(body, kind.typ)
		if len(problems) == 0 {
			problems = []fieldProblem{{path: typeErrorPath(err), message: oneLine(err.Error())}}
		}
		for _, p := range problems {
			if p.unknown {
				unknownOrDuplicate("unknown", p.path, p.message, 0)
			} else {
				problem(p.path, p.message)
				failed = append(failed, p.path)
			}
		}
	}
	for _, se := range strictErrs {
		fe, ok := se.(sjson.FieldError)
		if !ok {
			problem("", oneLine(se.Error()))
			continue
		}
		path := fe.FieldPath()
		name := lastName(path)
		if strings.HasPrefix(se.Error(), "duplicate field") {
			unknownOrDuplicate("duplicate", path, fmt.Sprintf("duplicate field %q", name), 0)
		} else {
			unknownOrDuplicate("unknown", path, unknownField(name), 0)
		}
	}
	if s.opts.ValidateRest && len(failed) > 0 && !hides && len(errs) < maxProblems && !slices.Contains(failed, "") {
		validateRest(body, kind, failed, problem)
	}
	if len(errs) > 0 {
		return
	}
	// Kind and apiVersion are set by the registry, whatever spelling of
	// them the document used.
	obj.GetObjectKind().SetGroupVersionKind(kind.GVK)
	d.Object, d.kind = obj, kind
	d.Warnings = warnings
	s.objs = append(s.objs, d)
}

// list decodes the items of a `kind: List` document.
func (s *streamDecoder) list(h *head, data []byte, pos positions, doc, docLine int, prefix string, depth int, problem func(path, msg string)) {
	if depth >= 5 {
		problem("", "Lists nested too deep")
		return
	}
	for k := range h.fields {
		switch k {
		case "apiVersion", "kind", "metadata", "items":
		default:
			problem(k, unknownField(k))
		}
	}
	var items []json.RawMessage
	if raw, ok := h.fields["items"]; ok {
		if err := json.Unmarshal(raw, &items); err != nil {
			problem("items", "Invalid type: expected array, got "+describeRaw(raw))
			return
		}
	}
	for i, item := range items {
		p := fmt.Sprintf("items[%d]", i)
		s.object(item, pos.sub(p), doc, docLine, joinPath(prefix, p), depth+1)
	}
}

// resolveKind finds the registered kind of a document, or says what is
// wrong with its apiVersion and kind.
func resolveKind(apiVersion, kind string) (*Kind, []fieldProblem) {
	if kind == "" {
		ps := []fieldProblem{{path: "kind", message: "Required value: every object needs a kind"}}
		if apiVersion == "" {
			ps = append(ps, fieldProblem{path: "apiVersion", message: "Required value: every object needs an apiVersion"})
		}
		return nil, ps
	}
	known, knownOK := KindNamed(kind)
	if apiVersion == "" {
		if knownOK {
			return nil, []fieldProblem{{path: "apiVersion", message: fmt.Sprintf("Required value: %s is served as %s", kind, known.APIVersion())}}
		}
		return nil, []fieldProblem{
			{path: "apiVersion", message: "Required value: every object needs an apiVersion"},
			{path: "kind", message: unknownKind(kind, "")},
		}
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, []fieldProblem{{path: "apiVersion", message: fmt.Sprintf("Invalid value: %q: %v", apiVersion, err)}}
	}
	if k, ok := KindFor(gv.WithKind(kind)); ok {
		return k, nil
	}
	if knownOK {
		return nil, []fieldProblem{{path: "apiVersion", message: fmt.Sprintf("Unsupported value: %q: %s is served as %s", apiVersion, kind, known.APIVersion())}}
	}
	return nil, []fieldProblem{{path: "kind", message: unknownKind(kind, apiVersion)}}
}

func unknownKind(kind, apiVersion string) string {
	msg := fmt.Sprintf("Unsupported value: %q: not a kind berth serves", kind)
	if k, ok := LookupResource(kind); ok {
		return msg + fmt.Sprintf(" (did you mean %s, apiVersion %s?)", k.GVK.Kind, k.APIVersion())
	}
	if k := closestKind(kind); k != nil {
		return msg + fmt.Sprintf(" (did you mean %s, apiVersion %s?)", k.GVK.Kind, k.APIVersion())
	}
	var inGV []string
	for _, k := range Kinds() {
		if k.APIVersion() == apiVersion {
			inGV = append(inGV, k.GVK.Kind)
		}
	}
	if len(inGV) > 0 {
		return msg + fmt.Sprintf(" in %s (it has %s)", apiVersion, strings.Join(inGV, ", "))
	}
	return msg
}

// closestKind finds a kind within two edits of a misspelt one.
func closestKind(kind string) *Kind {
	if len(kind) > 64 {
		return nil
	}
	var best *Kind
	bestDist := 3
	for _, k := range Kinds() {
		if d := editDistance(strings.ToLower(kind), strings.ToLower(k.GVK.Kind)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// typeErrorPath turns the Field of a JSON type error, which names embedded
// Go structs and leaves out indices ("spec.template.spec.containers.ports"),
// into the nearest field path it can: the typed walk normally finds the
// exact path first, and this is its fallback.
func typeErrorPath(err error) string {
	te, ok := err.(*json.UnmarshalTypeError)
	if !ok || te.Field == "" {
		return ""
	}
	var parts []string
	for p := range strings.SplitSeq(te.Field, ".") {
		// Embedded Go structs (ObjectMeta, ProbeHandler, VolumeSource)
		// start with an upper-case letter; JSON names of berth's kinds
		// do not.
		if p != "" && (p[0] < 'A' || p[0] > 'Z') {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ".")
}

// lastName returns the last field name of a path.
func lastName(path string) string {
	segs := splitPath(path)
	for i := len(segs) - 1; i >= 0; i-- {
		if !segs[i].subscript {
			return segs[i].name
		}
	}
	return path
}
