package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"text/template"

	"k8s.io/client-go/util/jsonpath"
)

// docTemplate prints a document (an object, or the List of them, as -o
// json prints it) through a user's template: -o jsonpath or -o
// go-template.
type docTemplate interface {
	execute(w io.Writer, doc any) error
}

// jsonPathTemplate is kubectl's JSONPath, from Kubernetes' own package,
// so that every template kubectl takes means the same here.
type jsonPathTemplate struct{ jp *jsonpath.JSONPath }

// newJSONPathTemplate parses a template as kubectl's -o jsonpath does: a
// missing key prints nothing rather than failing.
func newJSONPathTemplate(text string) (docTemplate, error) {
	if text == "" {
		return nil, usageErrorf("jsonpath template format specified but no template given")
	}
	jp := jsonpath.New("out").AllowMissingKeys(true)
	if err := jp.Parse(text); err != nil {
		return nil, usageErrorf("error parsing jsonpath %s, %v", text, err)
	}
	return jsonPathTemplate{jp}, nil
}

func (t jsonPathTemplate) execute(w io.Writer, doc any) error {
	if err := recovered(func() error { return t.jp.Execute(w, doc) }); err != nil {
		return fmt.Errorf("jsonpath: %w", err)
	}
	return nil
}

// recovered runs a template, turning a panic into an error. Kubernetes'
// JSONPath panics on some templates that parse ({range .}{[]0} does, in
// kubectl too); a template is the user's input, and bad input gets an
// error.
func recovered(run func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the template failed: %v", r)
		}
	}()
	return run()
}

// goTemplate is kubectl's -o go-template: Go's text/template over the
// object's JSON as generic maps and lists (whole numbers as int64, others
// as float64, as kubectl decodes them), with kubectl's two functions,
// exists and base64decode.
// A missing key prints "<no value>", as kubectl prints it by default.
type goTemplate struct {
	text string
	t    *template.Template
}

func newGoTemplate(text string) (docTemplate, error) {
	if text == "" {
		return nil, usageErrorf("template format specified but no template given")
	}
	t, err := template.New("output").Funcs(template.FuncMap{
		"exists":       exists,
		"base64decode": base64decode,
	}).Parse(text)
	if err != nil {
		return nil, usageErrorf("error parsing template %s, %v", text, err)
	}
	return &goTemplate{text: text, t: t}, nil
}

func (t *goTemplate) execute(w io.Writer, doc any) error {
	if err := recovered(func() error { return t.t.Execute(w, templateNumbers(doc)) }); err != nil {
		return fmt.Errorf("error executing template %q: %w", t.text, err)
	}
	return nil
}

// templateNumbers is doc with its json.Numbers as kubectl's template
// printer sees numbers: int64 when whole, else float64. `{{if gt
// .spec.replicas 1}}` then works here as there, and `1.0` fails as there.
func templateNumbers(doc any) any {
	switch v := doc.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = templateNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = templateNumbers(e)
		}
		return out
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		if f, err := v.Float64(); err == nil {
			return f
		}
		return v.String()
	}
	return doc
}

// exists reports whether index would find a value at these keys in a
// document: kubectl's template function of that name. A key of a map is
// a string, an index of a list or a string an integer.
func exists(item any, keys ...any) bool {
	v := item
	for _, k := range keys {
		switch c := v.(type) {
		case map[string]any:
			s, ok := k.(string)
			if !ok {
				return false
			}
			if v, ok = c[s]; !ok {
				return false
			}
		case []any:
			i, ok := intIndex(k, len(c))
			if !ok {
				return false
			}
			v = c[i]
		case string:
			i, ok := intIndex(k, len(c))
			if !ok {
				return false
			}
			v = c[i]
		default:
			return false
		}
	}
	return v != nil
}

// intIndex is k as an index into something of length n.
func intIndex(k any, n int) (int, bool) {
	var i int64
	switch x := k.(type) {
	case int:
		i = int64(x)
	case int64:
		i = x
	case int32:
		i = int64(x)
	case uint:
		i = int64(min(x, uint(n)))
	case uint64:
		i = int64(min(x, uint64(n)))
	default:
		return 0, false
	}
	return int(i), i >= 0 && i < int64(n)
}

// base64decode is kubectl's template function: a Secret's data decoded.
func base64decode(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("base64 decode failed: %w", err)
	}
	return string(b), nil
}
