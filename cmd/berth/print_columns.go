package main

import (
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"text/tabwriter"

	"k8s.io/client-go/util/jsonpath"
)

// column is one column of -o custom-columns.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// relaxedPath is the forms a column's path may take, as kubectl accepts
// them: name.name, .name.name, {name.name} or {.name.name}.
var relaxedPath = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// parseColumns reads an -o custom-columns=HEADER:PATH[,HEADER:PATH...]
// spec: a table of the columns asked for, each a JSONPath into the
// object, as kubectl prints it.
func parseColumns(spec string) ([]column, error) {
	if spec == "" {
		return nil, usageErrorf("custom-columns format specified but no custom columns given")
	}
	var cols []column
	for _, part := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(part, ":")
		if !ok || header == "" {
			return nil, usageErrorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		c, err := newColumn(header, path)
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, nil
}

// parseColumnsFile reads the file of -o custom-columns-file as kubectl
// does: a line of headers, then a line of paths, each separated by
// white space.
func parseColumnsFile(text string) ([]column, error) {
	lines := strings.SplitN(text, "\n", 3)
	if len(lines) < 2 {
		return nil, usageErrorf("invalid custom-columns file: expected a line of headers and a line of paths, each separated by white space")
	}
	headers, paths := strings.Fields(lines[0]), strings.Fields(lines[1])
	if len(headers) == 0 {
		return nil, usageErrorf("invalid custom-columns file: the first line names no header")
	}
	if len(headers) != len(paths) {
		return nil, usageErrorf("invalid custom-columns file: %d headers and %d paths", len(headers), len(paths))
	}
	cols := make([]column, len(headers))
	for i := range headers {
		c, err := newColumn(headers[i], paths[i])
		if err != nil {
			return nil, err
		}
		cols[i] = c
	}
	return cols, nil
}

// newColumn parses a column's path, in any of kubectl's relaxed forms.
func newColumn(header, path string) (column, error) {
	m := relaxedPath.FindStringSubmatch(path)
	if m == nil {
		return column{}, usageErrorf("unexpected path string %q in column %s, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'", path, header)
	}
	jp := jsonpath.New(header).AllowMissingKeys(true)
	if err := jp.Parse("{." + m[1] + m[2] + "}"); err != nil {
		return column{}, usageErrorf("error parsing jsonpath %s in column %s, %v", path, header, err)
	}
	return column{header: header, path: jp}, nil
}

// columnsPrinter prints objects as the rows of -o custom-columns, the
// header before the first row unless noHeaders.
type columnsPrinter struct {
	tw        *tabwriter.Writer
	cols      []column
	noHeaders bool
	started   bool
}

func newColumnsPrinter(w io.Writer, cols []column, noHeaders bool) *columnsPrinter {
	// kubectl's table writer: minimum width 6, padding 3. Each print
	// aligns its own rows: a watch's rows are aligned one at a time.
	return &columnsPrinter{tw: tabwriter.NewWriter(w, 6, 4, 3, ' ', 0), cols: cols, noHeaders: noHeaders}
}

// print writes one row per document, and flushes.
func (p *columnsPrinter) print(docs []any) error {
	if !p.started && !p.noHeaders {
		headers := make([]string, len(p.cols))
		for i, c := range p.cols {
			headers[i] = c.header
		}
		fmt.Fprintln(p.tw, strings.Join(headers, "\t"))
	}
	p.started = true
	for _, doc := range docs {
		cells := make([]string, len(p.cols))
		for i, c := range p.cols {
			var results [][]reflect.Value
			err := recovered(func() (err error) {
				results, err = c.path.FindResults(doc)
				return err
			})
			if err != nil {
				return fmt.Errorf("column %s: %w", c.header, err)
			}
			var values []string
			for _, r := range results {
				for _, v := range r {
					values = append(values, fmt.Sprint(v.Interface()))
				}
			}
			if len(values) == 0 {
				values = []string{"<none>"}
			}
			cells[i] = strings.Join(values, ",")
		}
		fmt.Fprintln(p.tw, strings.Join(cells, "\t"))
	}
	return p.tw.Flush()
}
