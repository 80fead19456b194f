package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// Output formats of `get -o` that take nothing more.
const (
	outputTable = ""
	outputWide  = "wide"
	outputJSON  = "json"
	outputYAML  = "yaml"
	outputName  = "name"
	// outputTemplate and outputColumns name the parsed forms that carry a
	// template or columns (see parseOutput).
	outputTemplate = "template"
	outputColumns  = "custom-columns"
)

// outputFormat is an -o value as parseOutput read it: a template or the
// columns are parsed (and their files read) once, before anything is
// fetched, and used for every object printed.
type outputFormat struct {
	// name is one of the output* constants.
	name string
	// tmpl is the template of -o jsonpath, go-template and their -file
	// forms.
	tmpl docTemplate
	// cols are the columns of -o custom-columns and custom-columns-file.
	cols []column
}

// document reports whether the format prints objects as documents (JSON
// or YAML), which is what an empty answer is printed as too.
func (f outputFormat) document() bool { return f.name == outputJSON || f.name == outputYAML }

// allowedOutputs is what the error for an unknown -o lists, as kubectl.
const allowedOutputs = "custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,jsonpath-file,name,template,templatefile,wide,yaml"

// parseOutput reads an -o value: a named format, or kubectl's
// jsonpath=, go-template= (template=), custom-columns= and their -file=
// forms (go-template-file= or templatefile=), whose template or columns
// it parses here.
func parseOutput(s string) (outputFormat, error) {
	switch s {
	case outputTable, outputWide, outputJSON, outputYAML, outputName:
		return outputFormat{name: s}, nil
	}
	form, arg, ok := strings.Cut(s, "=")
	if !ok {
		return outputFormat{}, usageErrorf("unable to match a printer suitable for the output format %q, allowed formats are: %s", s, allowedOutputs)
	}
	text := arg
	switch form {
	case "jsonpath-file", "go-template-file", "templatefile", "custom-columns-file":
		if arg == "" {
			return outputFormat{}, usageErrorf("%s format specified but no file given", form)
		}
		data, err := os.ReadFile(arg)
		if err != nil {
			return outputFormat{}, usageErrorf("error reading template file %s: %v", arg, err)
		}
		text = string(data)
	}
	var err error
	f := outputFormat{name: outputTemplate}
	switch form {
	case "jsonpath", "jsonpath-file":
		f.tmpl, err = newJSONPathTemplate(text)
	case "go-template", "template", "go-template-file", "templatefile":
		f.tmpl, err = newGoTemplate(text)
	case "custom-columns":
		f.name = outputColumns
		f.cols, err = parseColumns(text)
	case "custom-columns-file":
		f.name = outputColumns
		f.cols, err = parseColumnsFile(text)
	default:
		return outputFormat{}, usageErrorf("unable to match a printer suitable for the output format %q, allowed formats are: %s", s, allowedOutputs)
	}
	if err != nil {
		return outputFormat{}, err
	}
	return f, nil
}

// kindObjects are the objects of one kind that a command fetched.
type kindObjects struct {
	kind *api.Kind
	objs []api.Object
	// served is the server's Table of objs, for a kind whose columns
	// berth cannot compute (see servedColumns); nil for the others.
	served *servedTable
}

// servedTable is what a table prints from the server's Tables: their
// column definitions, and each row's cells by its object's UID.
type servedTable struct {
	defs []metav1.TableColumnDefinition
	rows map[types.UID][]any
}

// printOptions say how `get` prints what it fetched.
type printOptions struct {
	output outputFormat
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
	switch opts.output.name {
	case outputJSON, outputYAML, outputTemplate, outputColumns:
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
		if opts.output.name == outputColumns {
			return newColumnsPrinter(w, opts.output.cols, opts.table.noHeaders).print(items)
		}
		doc := any(listDocument(items))
		if opts.single && len(items) == 1 {
			doc = items[0]
		}
		if opts.output.tmpl != nil {
			return opts.output.tmpl.execute(w, doc)
		}
		return writeDocument(w, opts.output.name, doc)
	case outputName:
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
	topts.wide = opts.output.name == outputWide
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
		p := newTablePrinter(w, g.kind, topts)
		if g.served != nil {
			p.cols = table.Served(g.served.defs, g.served.rows, topts.wide)
		}
		if err := p.print(g.objs, now); err != nil {
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
	w       io.Writer
	output  outputFormat
	table   *tablePrinter
	columns *columnsPrinter
	count   int
}

func newStreamPrinter(w io.Writer, k *api.Kind, output outputFormat, topts tableOptions) *streamPrinter {
	topts.wide = output.name == outputWide
	p := &streamPrinter{w: w, output: output, table: newTablePrinter(w, k, topts)}
	if output.name == outputColumns {
		p.columns = newColumnsPrinter(w, output.cols, topts.noHeaders)
	}
	return p
}

func (s *streamPrinter) print(objs []api.Object, now time.Time) error {
	switch s.output.name {
	case outputTable, outputWide:
		return s.table.print(objs, now)
	}
	for _, obj := range objs {
		s.count++
		switch s.output.name {
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
		case s.output.tmpl != nil:
			err = s.output.tmpl.execute(s.w, doc)
		default:
			err = writeDocument(s.w, s.output.name, doc)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
