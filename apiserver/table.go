package apiserver

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

// kubectl asks for tables (Accept: application/json;as=Table;v=v1;g=meta.k8s.io)
// so that `kubectl get` prints the server's columns. The columns and cells
// come from package table, the same definitions `berth get` prints, so the
// two show the same thing. Every column is sent, wide ones with priority
// 1, and kubectl drops those unless -o wide, as it does with Kubernetes.

// Values of ?includeObject.
const (
	includeNone     = "None"
	includeMetadata = "Metadata"
	includeObject   = "Object"
)

// tabler renders objects of one kind as Table rows.
type tabler struct {
	kind    *api.Kind
	cols    []table.Column
	include string
	// now is read for each row: a watch renders its events as they come,
	// each with the ages of its moment.
	now func() time.Time
}

// now is the time tables measure ages against.
func (s *Server) now() time.Time { return s.clock.Now() }

func (s *Server) newTabler(r *http.Request, k *api.Kind) (*tabler, error) {
	include := r.URL.Query().Get("includeObject")
	switch include {
	case "":
		include = includeMetadata
	case includeNone, includeMetadata, includeObject:
	default:
		return nil, badRequest("includeObject must be None, Metadata or Object, not %q", include)
	}
	return &tabler{kind: k, cols: table.Definitions(k), include: include, now: s.now}, nil
}

func (t *tabler) columnDefinitions() []metav1.TableColumnDefinition {
	defs := make([]metav1.TableColumnDefinition, len(t.cols))
	for i, c := range t.cols {
		defs[i] = metav1.TableColumnDefinition{
			Name:        c.Name,
			Type:        c.Type,
			Format:      c.Format,
			Description: c.Description,
			Priority:    c.Priority,
		}
	}
	return defs
}

// row renders one object. Integer columns carry numbers, as Kubernetes'
// tables do.
func (t *tabler) row(obj api.Object) metav1.TableRow {
	cells := make([]any, len(t.cols))
	now := t.now()
	for i, c := range t.cols {
		v := c.APICell(obj, now)
		cells[i] = v
		if c.Type == "integer" {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				cells[i] = n
			}
		}
	}
	row := metav1.TableRow{Cells: cells}
	switch t.include {
	case includeObject:
		raw, _ := json.Marshal(obj)
		row.Object = runtime.RawExtension{Raw: raw}
	case includeMetadata:
		row.Object = runtime.RawExtension{Raw: partialMetadata(obj)}
	}
	return row
}

// single is a Table of one object (a get, a watch event); headers says
// whether it carries the column definitions.
func (t *tabler) single(obj api.Object, headers bool) *metav1.Table {
	tbl := &metav1.Table{
		TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: obj.GetResourceVersion()},
		Rows:     []metav1.TableRow{t.row(obj)},
	}
	if headers {
		tbl.ColumnDefinitions = t.columnDefinitions()
	} else {
		tbl.ColumnDefinitions = []metav1.TableColumnDefinition{}
	}
	return tbl
}

// partialMetadata is an object's metadata as a PartialObjectMetadata,
// which kubectl reads for the NAMESPACE column and --show-labels.
func partialMetadata(obj api.Object) []byte {
	p := metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
		ObjectMeta: objectMeta(obj),
	}
	raw, _ := json.Marshal(&p)
	return raw
}

// objectMeta returns a copy of an object's ObjectMeta (its maps and
// slices shared, for reading).
func objectMeta(obj api.Object) metav1.ObjectMeta {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return metav1.ObjectMeta{
			Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: obj.GetUID(),
			ResourceVersion: obj.GetResourceVersion(), Generation: obj.GetGeneration(),
			CreationTimestamp: obj.GetCreationTimestamp(), DeletionTimestamp: obj.GetDeletionTimestamp(),
			Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(), OwnerReferences: obj.GetOwnerReferences(),
			Finalizers: obj.GetFinalizers(),
		}
	}
	f := reflect.ValueOf(obj).Elem().FieldByName("ObjectMeta")
	if !f.IsValid() {
		return metav1.ObjectMeta{}
	}
	return f.Interface().(metav1.ObjectMeta)
}
