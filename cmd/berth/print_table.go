package main

import (
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// kubectl's table layout (k8s.io/cli-runtime/pkg/printers.GetNewTabWriter:
// minwidth 6, padding 3, padchar ' ', RememberWidths): every cell but the
// last of a line is padded to the widest cell of its column plus three
// spaces, and at least six. It is done here rather than with text/tabwriter
// because a watch prints rows one event at a time and kubectl keeps the
// widths it has seen across those flushes (RememberWidths, which only its
// fork of tabwriter has), so later rows stay under the header.
const (
	tableMinWidth = 6
	tablePadding  = 3
)

// tableOptions are the flags that change a table's shape.
type tableOptions struct {
	// wide adds the priority 1 columns (-o wide).
	wide bool
	// allNamespaces adds a NAMESPACE column first, for namespaced kinds (-A).
	allNamespaces bool
	// showLabels adds a LABELS column last (--show-labels).
	showLabels bool
	// labelColumns adds a column for each of these labels, before LABELS
	// (-L): headed by the label's name (after any prefix), uppercased.
	labelColumns []string
	// noHeaders leaves the header out (--no-headers).
	noHeaders bool
	// withKind prefixes names with their kind (`pod/web`), as kubectl
	// does when one command prints tables of several kinds.
	withKind bool
}

// tablePrinter prints the rows of one kind, the header before the first,
// with column widths that only grow.
type tablePrinter struct {
	w       io.Writer
	kind    *api.Kind
	cols    []table.Column
	opts    tableOptions
	widths  []int
	started bool
}

func newTablePrinter(w io.Writer, k *api.Kind, opts tableOptions) *tablePrinter {
	return &tablePrinter{w: w, kind: k, cols: table.Columns(k, opts.wide), opts: opts}
}

// printTable prints one kind's objects as a table. It is a pure function
// of its arguments: the golden tests call it with a fixed now.
func printTable(w io.Writer, k *api.Kind, objs []api.Object, opts tableOptions, now time.Time) error {
	return newTablePrinter(w, k, opts).print(objs, now)
}

func (p *tablePrinter) namespaceColumn() bool { return p.opts.allNamespaces && p.kind.Namespaced }

func (p *tablePrinter) header() []string {
	var h []string
	if p.namespaceColumn() {
		h = append(h, "NAMESPACE")
	}
	for _, c := range p.cols {
		h = append(h, c.Header())
	}
	for _, l := range p.opts.labelColumns {
		h = append(h, strings.ToUpper(l[strings.LastIndex(l, "/")+1:]))
	}
	if p.opts.showLabels {
		h = append(h, "LABELS")
	}
	return h
}

func (p *tablePrinter) row(obj api.Object, now time.Time) []string {
	var r []string
	if p.namespaceColumn() {
		r = append(r, obj.GetNamespace())
	}
	for _, c := range p.cols {
		cell := c.Cell(obj, now)
		if p.opts.withKind && c.Format == "name" {
			cell = objectRef(p.kind, cell)
		}
		r = append(r, cell)
	}
	for _, l := range p.opts.labelColumns {
		r = append(r, obj.GetLabels()[l])
	}
	if p.opts.showLabels {
		r = append(r, labels.FormatLabels(obj.GetLabels()))
	}
	for i := range r {
		r[i] = cellText(r[i])
	}
	return r
}

// print writes the rows of objs, preceded by the header the first time.
// Nothing is printed for no objects, so a watch that starts empty prints
// its header with its first event, as kubectl's does.
func (p *tablePrinter) print(objs []api.Object, now time.Time) error {
	if len(objs) == 0 {
		return nil
	}
	lines := make([][]string, 0, len(objs)+1)
	if !p.started && !p.opts.noHeaders {
		lines = append(lines, p.header())
	}
	p.started = true
	for _, obj := range objs {
		lines = append(lines, p.row(obj, now))
	}
	p.grow(lines)
	var b strings.Builder
	for _, line := range lines {
		for i, cell := range line {
			b.WriteString(cell)
			if i == len(line)-1 {
				break
			}
			b.WriteString(strings.Repeat(" ", p.widths[i]-utf8.RuneCountInString(cell)))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// grow widens the columns to fit lines; the last cell of a line is never
// padded, as tabwriter leaves text after the last tab alone.
func (p *tablePrinter) grow(lines [][]string) {
	for _, line := range lines {
		for i := 0; i < len(line)-1; i++ {
			if i == len(p.widths) {
				p.widths = append(p.widths, tableMinWidth)
			}
			if w := utf8.RuneCountInString(line[i]) + tablePadding; w > p.widths[i] {
				p.widths[i] = w
			}
		}
	}
}

// cellText keeps one cell on one line, as kubectl does: it is cut at the
// first line break with "..." to say so, and other control characters,
// which would break the alignment or the terminal, become spaces.
func cellText(s string) string {
	cut := false
	if i := strings.IndexAny(s, "\n\r\f"); i >= 0 {
		s, cut = s[:i], true
	}
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if cut {
		s += "..."
	}
	return s
}
