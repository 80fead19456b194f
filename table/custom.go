package table

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"

	"github.com/berth-dev/berth/api"
)

// customColumns caches the columns of each custom kind; a CRD that
// changes registers a new kind.
var customColumns sync.Map // *api.Kind → []Column

// customDefinitions are the columns of a custom kind: its name, then the
// additionalPrinterColumns of its CRD's storage version, each a JSONPath
// into the object, as Kubernetes renders them; Age alone when it has
// none.
func customDefinitions(k *api.Kind) []Column {
	if cols, ok := customColumns.Load(k); ok {
		return cols.([]Column)
	}
	cols := []Column{nameColumn}
	if v := api.CRDVersion(k.CRD, k.GVK.Version); v != nil && len(v.AdditionalPrinterColumns) > 0 {
		for _, def := range v.AdditionalPrinterColumns {
			cols = append(cols, printerColumn(def.Name, def.Type, def.Format, def.Description, def.Priority, def.JSONPath))
		}
	} else {
		cols = append(cols, ageColumn)
	}
	actual, _ := customColumns.LoadOrStore(k, cols)
	return actual.([]Column)
}

// printerColumn is one additionalPrinterColumn: a JSONPath's values,
// joined by commas; a date as the age it makes.
func printerColumn(name, typ, format, description string, priority int32, path string) Column {
	jp := jsonpath.New(name).AllowMissingKeys(true)
	err := jp.Parse("{" + path + "}")
	return Column{Name: name, Type: typ, Format: format, Description: description, Priority: priority,
		cell: func(o api.Object, now time.Time) string {
			u, ok := o.(*unstructured.Unstructured)
			if !ok || err != nil {
				return ""
			}
			results, ferr := jp.FindResults(u.Object)
			if ferr != nil || len(results) == 0 {
				return ""
			}
			var vals []string
			for _, r := range results[0] {
				if !r.IsValid() || (r.Kind() == reflect.Interface || r.Kind() == reflect.Pointer) && r.IsNil() {
					continue
				}
				v := r.Interface()
				if typ == "date" {
					if s, ok := v.(string); ok {
						if t, err := time.Parse(time.RFC3339, s); err == nil {
							vals = append(vals, Age(metav1.NewTime(t), now))
							continue
						}
					}
				}
				if s, ok := v.(string); ok {
					vals = append(vals, s)
				} else {
					vals = append(vals, fmt.Sprint(v))
				}
			}
			return strings.Join(vals, ",")
		}}
}
