package client

import (
	"context"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// tableAccept asks for the server's table of a resource, as `kubectl get`
// does, with JSON as what to fall back to.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// Table reads the server's table of the object name of kind k, or, when
// name is empty, of the objects in namespace (every namespace when empty)
// that opts select: the columns the server prints, and a row of cells
// for each object with the object itself. It is what a client shows of a
// kind whose columns it cannot compute itself, as a custom kind whose
// CustomResourceDefinition the caller may not read.
func (c *Client) Table(ctx context.Context, k *api.Kind, namespace, name string, opts ListOptions) (*metav1.Table, error) {
	q := opts.query()
	q.Set("includeObject", "Object")
	var tbl metav1.Table
	if err := c.call(ctx, &request{method: http.MethodGet, path: ResourcePath(k, namespace, name, ""), query: q, accept: tableAccept}, &tbl); err != nil {
		return nil, err
	}
	if tbl.Kind != "Table" {
		return nil, fmt.Errorf("client: the server answered a request for the Table of %s with a %q", k.Resource, tbl.Kind)
	}
	return &tbl, nil
}
