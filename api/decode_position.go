package api

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// positions maps field paths of one document to lines of its file. It
// walks a go.yaml.in/yaml/v3 node tree, which keeps the line of every key,
// while sigs.k8s.io/yaml (which does the actual conversion) keeps none.
//
// The node tree is built only when a line is asked for (an error, or a
// List item) and is then kept by the document's tree: a valid document is
// parsed once, by the conversion, and what a Decoded keeps alive for LineOf
// is the document's text.
//
// +kubebuilder:object:generate=false
type positions struct {
	tree     *lazyTree // nil when there is no document
	path     string    // of the node inside the document's root ("" for the root, "items[2]")
	base     int       // line of the file where the node tree's line 1 is
	last     int       // last line of the document in the file
	rootLine int       // line of the root node read from the text, 0 when not known without parsing
	// noDuplicates says the document is known to have no duplicate keys
	// (the strict conversion found none), so they need not be looked for.
	noDuplicates bool
}

// lazyTree is the node tree of one document, parsed on first use.
//
// +kubebuilder:object:generate=false
type lazyTree struct {
	mu     sync.Mutex
	data   []byte // nil once parsed
	parsed bool
	root   *yaml.Node // a mapping node, or nil when the document did not parse
}

// get returns the document's node tree, parsing it the first time.
func (t *lazyTree) get() *yaml.Node {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.parsed {
		t.root, _ = parseNodes(t.data)
		t.data, t.parsed = nil, true
	}
	return t.root
}

// peek returns the document's node tree without keeping it when it has
// not been parsed yet: what only decoding needs (duplicate keys) must not
// stay alive with the object.
func (t *lazyTree) peek() *yaml.Node {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.parsed {
		return t.root
	}
	root, _ := parseNodes(t.data)
	return root
}

// newPositions places a document at line base of a file. Its node tree is
// parsed from data when first needed; data must not change afterwards.
func newPositions(data []byte, base int) positions {
	last := base + bytes.Count(bytes.TrimRight(data, "\n"), []byte("\n"))
	return positions{tree: &lazyTree{data: data}, base: base, last: last, rootLine: firstLine(data, base)}
}

// firstLine returns the line of the file where a document's root mapping
// starts, as the node tree would give it, when the text shows it plainly:
// the first line that is not blank, a comment or a directive is a plain key
// ("apiVersion: v1"). It returns 0 when it cannot tell (a quoted key, a
// flow mapping, a tag, an anchor, characters the YAML parser also breaks
// lines at), and the node tree is asked.
func firstLine(data []byte, base int) int {
	line := base
	for l := range bytes.Lines(data) {
		for _, c := range l {
			if c >= 0x80 || c == '\t' {
				return 0
			}
		}
		t := bytes.TrimRight(bytes.TrimLeft(l, " "), "\n")
		if len(t) == 0 || t[0] == '#' || t[0] == '%' {
			line++
			continue
		}
		if !isPlainStart(t[0]) {
			return 0
		}
		for i, c := range t {
			switch {
			case c == ':' && (i+1 == len(t) || t[i+1] == ' '):
				return line
			case !isPlainStart(c) && c != '.' && c != '-' && c != '/':
				return 0
			}
		}
		return 0
	}
	return 0
}

func isPlainStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// root returns the node the positions are about, nil when the document
// has no node tree or no such node.
func (p positions) root() *yaml.Node {
	return p.under(p.tree.get())
}

// under finds the node the positions are about in the document's tree n.
func (p positions) under(n *yaml.Node) *yaml.Node {
	if n == nil || p.path == "" {
		return n
	}
	for _, seg := range splitPath(p.path) {
		_, val := child(n, seg)
		if val == nil {
			return nil
		}
		n = val
	}
	return n
}

// parseNodes parses one document into a node tree; nil and the parser's
// error when it does not parse.
func parseNodes(data []byte) (root *yaml.Node, err error) {
	defer func() {
		// The node tree only adds line numbers: a panic in the parser must
		// cost the lines, not the process.
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("the YAML parser failed: %v", r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	n := &doc
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil, nil
		}
		n = n.Content[0]
	}
	return n, nil
}

// abs converts a line of the node tree into a line of the file. The YAML
// parser also breaks lines at characters the file's line count does not
// (NEL, LS, PS); such lines are kept within the document.
func (p positions) abs(line int) int {
	if line <= 0 {
		return 0
	}
	return min(p.base+line-1, p.last)
}

// line returns the file line of the field at path, or of the deepest part of
// path that exists (a missing field is reported where its parent is), or 0
// when there is no tree.
func (p positions) line(path string) int {
	if path == "" && p.path == "" && p.rootLine > 0 {
		return p.rootLine
	}
	n := p.root()
	if n == nil {
		return 0
	}
	line := n.Line
	for _, seg := range splitPath(path) {
		key, val := child(n, seg)
		if val == nil {
			break
		}
		if key != nil {
			line = key.Line
		} else {
			line = val.Line
		}
		n = val
	}
	return p.abs(line)
}

// sub returns the positions of a node below the root, for the items of a
// List.
func (p positions) sub(path string) positions {
	return positions{tree: p.tree, path: joinPath(p.path, path), base: p.base, last: p.last, noDuplicates: p.noDuplicates}
}

// pathSegment is one step of a field path: a name (".name") or a subscript
// ("[0]", "[app.kubernetes.io/name]").
//
// +kubebuilder:object:generate=false
type pathSegment struct {
	name      string
	subscript bool
}

// splitPath splits a field path as field.Path renders it:
// "spec.containers[0].env[1].name", "metadata.labels[app.kubernetes.io/name]".
func splitPath(path string) []pathSegment {
	var segs []pathSegment
	for i := 0; i < len(path); {
		switch path[i] {
		case '.':
			i++
		case '[':
			end := strings.IndexByte(path[i:], ']')
			if end < 0 {
				segs = append(segs, pathSegment{name: path[i+1:], subscript: true})
				return segs
			}
			segs = append(segs, pathSegment{name: path[i+1 : i+end], subscript: true})
			i += end + 1
		default:
			end := strings.IndexAny(path[i:], ".[")
			if end < 0 {
				end = len(path) - i
			}
			segs = append(segs, pathSegment{name: path[i : i+end]})
			i += end
		}
	}
	return segs
}

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// child finds the key and value nodes of one path segment under n; for a
// sequence item the key is nil.
func child(n *yaml.Node, seg pathSegment) (key, val *yaml.Node) {
	n = resolve(n)
	if n == nil {
		return nil, nil
	}
	switch n.Kind {
	case yaml.SequenceNode:
		if !seg.subscript {
			return nil, nil
		}
		i, err := strconv.Atoi(seg.name)
		if err != nil || i < 0 || i >= len(n.Content) {
			return nil, nil
		}
		return nil, n.Content[i]
	case yaml.MappingNode:
		return lookupKey(n, seg.name, 0)
	}
	return nil, nil
}

// lookupKey finds name in a mapping, then in the mappings merged into it
// with "<<".
func lookupKey(n *yaml.Node, name string, depth int) (key, val *yaml.Node) {
	if depth > 10 {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Tag != mergeTag && (k.Value == name || yaml11Bool(k) == name) {
			return k, n.Content[i+1]
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Tag != mergeTag {
			continue
		}
		merged := resolve(n.Content[i+1])
		if merged == nil {
			continue
		}
		candidates := []*yaml.Node{merged}
		if merged.Kind == yaml.SequenceNode {
			candidates = merged.Content
		}
		for _, m := range candidates {
			if m = resolve(m); m != nil && m.Kind == yaml.MappingNode {
				if k, v := lookupKey(m, name, depth+1); v != nil {
					return k, v
				}
			}
		}
	}
	return nil, nil
}

const mergeTag = "!!merge"

// yaml11Bool returns "true" or "false" for a plain scalar that YAML 1.1 reads
// as a boolean (y, n, yes, off, …): sigs.k8s.io/yaml reads YAML 1.1, so a
// key `n:` reaches the decoder as "false", while the node tree (YAML 1.2)
// keeps "n".
func yaml11Bool(n *yaml.Node) string {
	if n.Style != 0 && n.Style != yaml.TaggedStyle {
		return ""
	}
	switch n.Value {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE":
		return "true"
	case "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE":
		return "false"
	}
	return ""
}

// duplicateKey is a mapping key that appears twice.
//
// +kubebuilder:object:generate=false
type duplicateKey struct {
	path  string
	name  string
	line  int // of the second occurrence
	first int // of the first occurrence
}

// duplicateKeys finds keys that appear more than once in a mapping. The
// YAML-to-JSON conversion silently keeps one of them, so they must be found
// in the node tree. The Go type the document decodes into tells struct
// fields ("spec.replicas") from map keys ("metadata.labels[app]"); hasTree
// is false when the document has no node tree to look in. Aliases
// are not followed: what they point at is checked where it is defined, and
// following them could blow up.
func (p positions) duplicateKeys(t reflect.Type, skipTop map[string]bool) (dups []duplicateKey, hasTree bool) {
	root := p.under(p.tree.peek())
	if root == nil {
		return nil, false
	}
	var walk func(n *yaml.Node, t reflect.Type, path *field.Path, depth int)
	walk = func(n *yaml.Node, t reflect.Type, path *field.Path, depth int) {
		if depth > 10000 || len(dups) >= maxProblems {
			return
		}
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch n.Kind {
		case yaml.MappingNode:
			seen := make(map[string]int, len(n.Content)/2)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Kind != yaml.ScalarNode || k.Tag == mergeTag {
					walk(v, t, path, depth+1)
					continue
				}
				if depth == 0 && skipTop[k.Value] {
					continue
				}
				childPath, childType := childOf(path, t, k.Value)
				if first, ok := seen[k.Value]; ok {
					dups = append(dups, duplicateKey{path: pathString(childPath), name: k.Value, line: p.abs(k.Line), first: p.abs(first)})
				} else {
					seen[k.Value] = k.Line
				}
				walk(v, childType, childPath, depth+1)
			}
		case yaml.SequenceNode:
			var elem reflect.Type
			if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
				elem = t.Elem()
			}
			for i, c := range n.Content {
				walk(c, elem, path.Index(i), depth+1)
			}
		}
	}
	if root := resolve(root); root != nil {
		walk(root, t, nil, 0)
	}
	return dups, true
}

// childOf returns the path and Go type of a mapping key under a value of
// type t (nil when unknown).
func childOf(path *field.Path, t reflect.Type, key string) (*field.Path, reflect.Type) {
	if t == nil {
		return path.Child(key), nil
	}
	switch t.Kind() {
	case reflect.Map:
		return path.Key(key), t.Elem()
	case reflect.Struct:
		if f, ok := jsonFieldsOf(t)[key]; ok {
			return path.Child(key), f.typ
		}
	}
	return path.Child(key), nil
}
