package table

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// Served shows the server's cells as it sent them, numbers whole, and
// None where it sent nothing or the object has no row; -o wide adds the
// priority 1 columns.
func TestServed(t *testing.T) {
	defs := []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Replicas", Type: "integer"},
		{Name: "Ready", Type: "string"},
		{Name: "Suspended", Type: "boolean", Priority: 1},
		{Name: "Ports", Type: "string", Priority: 1},
	}
	rows := map[types.UID][]any{
		"a": {"web", float64(12000000), nil, true, []any{float64(80), float64(443)}},
		"b": {"short"},
	}
	obj := func(uid types.UID) api.Object {
		return &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: uid}}
	}
	cells := func(cols []Column, o api.Object) []string {
		var out []string
		for _, c := range cols {
			out = append(out, c.Cell(o, time.Time{}))
		}
		return out
	}
	narrow, wide := Served(defs, rows, false), Served(defs, rows, true)
	if got, want := cells(narrow, obj("a")), []string{"web", "12000000", None}; !reflect.DeepEqual(got, want) {
		t.Errorf("a: %q, want %q", got, want)
	}
	if got, want := cells(wide, obj("a")), []string{"web", "12000000", None, "true", "[80,443]"}; !reflect.DeepEqual(got, want) {
		t.Errorf("a, wide: %q, want %q", got, want)
	}
	if got, want := cells(wide, obj("b")), []string{"short", None, None, None, None}; !reflect.DeepEqual(got, want) {
		t.Errorf("a row short of cells: %q, want %q", got, want)
	}
	if got, want := cells(narrow, obj("c")), []string{None, None, None}; !reflect.DeepEqual(got, want) {
		t.Errorf("an object without a row: %q, want %q", got, want)
	}
	if narrow[0].Format != "name" || wide[3].Header() != "SUSPENDED" {
		t.Errorf("definitions not kept: %+v", wide)
	}
}
