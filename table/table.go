package table

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/berth-dev/berth/api"
)

// None is what a cell shows when it has nothing to show (SPEC §2), so
// that every row has a word in every column and `awk '{print $3}'` works.
const None = "<none>"

// Column is one column of a kind's table, described the way a Kubernetes
// Table's columnDefinitions describe it, so the API server can serve it
// unchanged.
type Column struct {
	// Name is the column's name as Kubernetes spells it ("Cluster-IP",
	// "Last Seen"); tables print it upper-cased.
	Name string
	// Type is the OpenAPI type of the column: "string" or "integer".
	Type string
	// Format is "name" for the column that names the object.
	Format string
	// Priority 0 columns are always shown; priority 1 columns only with
	// `-o wide`, as kubectl filters them.
	Priority int32
	// Description says what the column holds, for Table responses.
	Description string
	// Blank marks a column whose empty cell Kubernetes' own Table
	// leaves empty (kubectl then prints nothing there): the API's
	// Tables do the same, berth's own tables still print None.
	Blank bool

	cell func(obj api.Object, now time.Time) string
}

// Header is the column's title as kubectl prints it.
func (c Column) Header() string { return strings.ToUpper(c.Name) }

// Cell renders the column for obj at time now (ages are relative to it).
// An empty cell renders as None.
func (c Column) Cell(obj api.Object, now time.Time) string {
	s := ""
	if c.cell != nil {
		s = c.cell(obj, now)
	}
	if s == "" {
		return None
	}
	return s
}

// APICell is the cell as the API's Tables carry it: Cell, except that a
// Blank column's empty cell stays empty, as in Kubernetes' Tables.
func (c Column) APICell(obj api.Object, now time.Time) string {
	if c.Blank && c.cell != nil {
		return c.cell(obj, now)
	}
	return c.Cell(obj, now)
}

// Definitions returns every column of a kind, wide ones included, in
// order. Kinds without their own definition get NAME and AGE.
func Definitions(k *api.Kind) []Column {
	if k != nil && k.Custom {
		return customDefinitions(k)
	}
	if k != nil {
		if cols, ok := definitions[k.GVK.Kind]; ok {
			return cols
		}
	}
	return []Column{nameColumn, ageColumn}
}

// Columns returns the columns a table of the kind shows: the priority 0
// ones, and with wide the priority 1 ones as well.
func Columns(k *api.Kind, wide bool) []Column {
	return shown(Definitions(k), wide)
}

// shown are the columns of all a table shows: the priority 0 ones, and
// with wide every one.
func shown(all []Column, wide bool) []Column {
	if wide {
		return all
	}
	cols := make([]Column, 0, len(all))
	for _, c := range all {
		if c.Priority == 0 {
			cols = append(cols, c)
		}
	}
	return cols
}

// Headers returns the titles of Columns(k, wide).
func Headers(k *api.Kind, wide bool) []string {
	cols := Columns(k, wide)
	h := make([]string, len(cols))
	for i, c := range cols {
		h[i] = c.Header()
	}
	return h
}

// Row renders the cells of Columns(k, wide) for one object.
func Row(k *api.Kind, obj api.Object, wide bool, now time.Time) []string {
	return Cells(Columns(k, wide), obj, now)
}

// Cells renders the given columns for one object.
func Cells(cols []Column, obj api.Object, now time.Time) []string {
	row := make([]string, len(cols))
	for i, c := range cols {
		row[i] = c.Cell(obj, now)
	}
	return row
}

// Age renders the time since t the way kubectl does (`45s`, `2m30s`,
// `3h15m`, `25d`, `2y3d`), through apimachinery's HumanDuration, which is
// kubectl's own. A zero time is `<unknown>`, as kubectl prints it.
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// on adapts a cell function of one Go type to the column's signature; an
// object of another type renders empty.
func on[T api.Object](f func(T, time.Time) string) func(api.Object, time.Time) string {
	return func(obj api.Object, now time.Time) string {
		o, ok := obj.(T)
		if !ok {
			return ""
		}
		return f(o, now)
	}
}
