package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"k8s.io/client-go/util/jsonpath"
)

// outputColumns prefixes -o custom-columns=HEADER:PATH[,HEADER:PATH...]:
// a table of the columns asked for, each a JSONPath into the object, as
// kubectl prints it.
const outputColumns = "custom-columns="

// column is one column of -o custom-columns.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// relaxedPath is the forms a column's path may take, as kubectl accepts
// them: name.name, .name.name, {name.name} or {.name.name}.
var relaxedPath = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// parseColumns reads a custom-columns spec.
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
		m := relaxedPath.FindStringSubmatch(path)
		if m == nil {
			return nil, usageErrorf("unexpected path string %q in column %s, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'", path, header)
		}
		jp := jsonpath.New(header).AllowMissingKeys(true)
		if err := jp.Parse("{." + m[1] + m[2] + "}"); err != nil {
			return nil, usageErrorf("error parsing jsonpath %s in column %s, %v", path, header, err)
		}
		cols = append(cols, column{header: header, path: jp})
	}
	return cols, nil
}

// columnsPrinter prints objects as the rows of -o custom-columns, the
// header before the first row unless noHeaders.
type columnsPrinter struct {
	tw        *tabwriter.Writer
	cols      []column
	noHeaders bool
	started   bool
}

func newColumnsPrinter(w io.Writer, output string, noHeaders bool) (*columnsPrinter, error) {
	cols, err := parseColumns(strings.TrimPrefix(output, outputColumns))
	if err != nil {
		return nil, err
	}
	// kubectl's table writer: minimum width 6, padding 3. Each print
	// aligns its own rows: a watch's rows are aligned one at a time.
	return &columnsPrinter{tw: tabwriter.NewWriter(w, 6, 4, 3, ' ', 0), cols: cols, noHeaders: noHeaders}, nil
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
			results, err := c.path.FindResults(doc)
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
