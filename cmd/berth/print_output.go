package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/api"
)

// Output formats of `get -o`.
const (
	outputTable = ""
	outputWide  = "wide"
	outputJSON  = "json"
	outputYAML  = "yaml"
	outputName  = "name"
)

// outputJSONPath prefixes -o jsonpath=TEMPLATE: kubectl's JSONPath
// template, applied to the object asked for or to the List of them.
const outputJSONPath = "jsonpath="

// parseOutput checks an -o value.
func parseOutput(s string) (string, error) {
	switch s {
	case outputTable, outputWide, outputJSON, outputYAML, outputName:
		return s, nil
	}
	if strings.HasPrefix(s, outputJSONPath) {
		if _, err := jsonPathOf(s); err != nil {
			return "", err
		}
		return s, nil
	}
	if spec, ok := strings.CutPrefix(s, outputColumns); ok {
		if _, err := parseColumns(spec); err != nil {
			return "", err
		}
		return s, nil
	}
	return "", usageErrorf("unable to match a printer suitable for the output format %q, allowed formats are: custom-columns,json,jsonpath,name,wide,yaml", s)
}

// newJSONPath parses a template as kubectl's -o jsonpath does: a missing
// key prints nothing rather than failing.
func newJSONPath(tmpl string) (*jsonpath.JSONPath, error) {
	if tmpl == "" {
		return nil, usageErrorf("jsonpath template format specified but no template given")
	}
	jp := jsonpath.New("out").AllowMissingKeys(true)
	if err := jp.Parse(tmpl); err != nil {
		return nil, usageErrorf("error parsing jsonpath %s, %v", tmpl, err)
	}
	return jp, nil
}

// jsonPathOf parses the template of an -o jsonpath value, nil for any
// other output.
func jsonPathOf(output string) (*jsonpath.JSONPath, error) {
	tmpl, ok := strings.CutPrefix(output, outputJSONPath)
	if !ok {
		return nil, nil
	}
	return newJSONPath(tmpl)
}

// writeJSONPath prints a document through a parsed template.
func writeJSONPath(w io.Writer, jp *jsonpath.JSONPath, doc any) error {
	if err := jp.Execute(w, doc); err != nil {
		return fmt.Errorf("jsonpath: %w", err)
	}
	return nil
}

// kindObjects are the objects of one kind that a command fetched.
type kindObjects struct {
	kind *api.Kind
	objs []api.Object
}

// printOptions say how `get` prints what it fetched.
type printOptions struct {
	output string
	table  tableOptions
	// single is set when the command named exactly one object: -o json
	// and -o yaml then print that object rather than a List, as kubectl.
	single bool
}

// printObjects prints what one `get` fetched: a table per kind (separated
// by a blank line, names prefixed by their kind when there are several), a
// List document or a single object, or one name per line. It is a pure
// function of its arguments.
func printObjects(w io.Writer, groups []kindObjects, opts printOptions, now time.Time) error {
	jsonPath, err := jsonPathOf(opts.output)
	if err != nil {
		return err
	}
	columns := strings.HasPrefix(opts.output, outputColumns)
	switch {
	case opts.output == outputJSON || opts.output == outputYAML || jsonPath != nil || columns:
		var items []any
		for _, g := range groups {
			for _, obj := range g.objs {
				doc, err := objectDocument(g.kind, obj)
				if err != nil {
					return err
				}
				items = append(items, doc)
			}
		}
		if columns {
			p, err := newColumnsPrinter(w, opts.output, opts.table.noHeaders)
			if err != nil {
				return err
			}
			return p.print(items)
		}
		doc := any(listDocument(items))
		if opts.single && len(items) == 1 {
			doc = items[0]
		}
		if jsonPath != nil {
			return writeJSONPath(w, jsonPath, doc)
		}
		return writeDocument(w, opts.output, doc)
	case opts.output == outputName:
		for _, g := range groups {
			for _, obj := range g.objs {
				if _, err := fmt.Fprintln(w, objectRef(g.kind, obj.GetName())); err != nil {
					return err
				}
			}
		}
		return nil
	}
	topts := opts.table
	topts.wide = opts.output == outputWide
	nonEmpty := 0
	for _, g := range groups {
		if len(g.objs) > 0 {
			nonEmpty++
		}
	}
	topts.withKind = nonEmpty > 1
	first := true
	for _, g := range groups {
		if len(g.objs) == 0 {
			continue
		}
		if !first {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		first = false
		if err := printTable(w, g.kind, g.objs, topts, now); err != nil {
			return err
		}
	}
	return nil
}

// objectDocument turns an object into the document -o json and -o yaml
// print: with its apiVersion and kind, and keys sorted, as kubectl prints
// what the server sent. Numbers stay exact (json.Number).
func objectDocument(k *api.Kind, obj api.Object) (map[string]any, error) {
	c := obj.DeepCopyObject().(api.Object)
	c.GetObjectKind().SetGroupVersionKind(k.GVK)
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", objectRef(k, obj.GetName()), err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("encode %s: %w", objectRef(k, obj.GetName()), err)
	}
	return doc, nil
}

// listDocument wraps items as kubectl prints a list (SPEC §2).
func listDocument(items []any) map[string]any {
	if items == nil {
		items = []any{}
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "List",
		"items":      items,
		"metadata":   map[string]any{"resourceVersion": ""},
	}
}

// jsonIndent is kubectl's: its JSON printer indents by four spaces.
const jsonIndent = "    "

// writeDocument prints one document as JSON or YAML.
func writeDocument(w io.Writer, format string, doc any) error {
	var out []byte
	var err error
	if format == outputYAML {
		out, err = yaml.Marshal(doc)
	} else {
		out, err = json.MarshalIndent(doc, "", jsonIndent)
		out = append(out, '\n')
	}
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// streamPrinter prints objects one at a time as a watch delivers them: a
// table row (header first), a JSON document, a YAML document after a
// `---` line, or a name.
type streamPrinter struct {
	w        io.Writer
	output   string
	table    *tablePrinter
	columns  *columnsPrinter
	jsonPath *jsonpath.JSONPath
	count    int
}

func newStreamPrinter(w io.Writer, k *api.Kind, output string, topts tableOptions) *streamPrinter {
	topts.wide = output == outputWide
	p := &streamPrinter{w: w, output: output, table: newTablePrinter(w, k, topts)}
	if strings.HasPrefix(output, outputColumns) {
		// parseOutput has checked the spec.
		p.columns, _ = newColumnsPrinter(w, output, topts.noHeaders)
	}
	p.jsonPath, _ = jsonPathOf(output) // parsed once, for every object
	return p
}

func (s *streamPrinter) print(objs []api.Object, now time.Time) error {
	switch s.output {
	case outputTable, outputWide:
		return s.table.print(objs, now)
	}
	for _, obj := range objs {
		s.count++
		switch s.output {
		case outputName:
			if _, err := fmt.Fprintln(s.w, objectRef(s.table.kind, obj.GetName())); err != nil {
				return err
			}
			continue
		case outputYAML:
			if s.count > 1 {
				if _, err := io.WriteString(s.w, "---\n"); err != nil {
					return err
				}
			}
		}
		doc, err := objectDocument(s.table.kind, obj)
		if err != nil {
			return err
		}
		switch {
		case s.columns != nil:
			err = s.columns.print([]any{doc})
		case s.jsonPath != nil:
			err = writeJSONPath(s.w, s.jsonPath, doc)
		default:
			err = writeDocument(s.w, s.output, doc)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
