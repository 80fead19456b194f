package table

import (
	"encoding/json"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// Served are the columns a table shows of a Table the API server
// rendered, for a kind whose columns a client cannot compute (a custom
// kind whose CustomResourceDefinition the caller may not read, as
// kubectl prints such kinds from the server's Table): defs are the
// Table's column definitions, rows its cells by the UID of the row's
// object. A cell shows as the server sent it, a number without an
// exponent; an object the rows lack shows None in every column.
func Served(defs []metav1.TableColumnDefinition, rows map[types.UID][]any, wide bool) []Column {
	all := make([]Column, len(defs))
	for i, d := range defs {
		all[i] = Column{Name: d.Name, Type: d.Type, Format: d.Format, Priority: d.Priority, Description: d.Description,
			cell: func(obj api.Object, _ time.Time) string {
				row := rows[obj.GetUID()]
				if i >= len(row) {
					return ""
				}
				return cellText(row[i])
			}}
	}
	return shown(all, wide)
}

// cellText is a Table cell as text: a cell decoded from JSON is a string,
// a number (float64), a bool, nil or, rarely, a list or an object.
func cellText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}
