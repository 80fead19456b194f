package client

import (
	"context"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ServerGroups reads the API groups the server serves (GET /apis), as
// kubectl's discovery client does: every user may read discovery.
func (c *Client) ServerGroups(ctx context.Context) (*metav1.APIGroupList, error) {
	out := &metav1.APIGroupList{}
	if err := c.call(ctx, &request{method: http.MethodGet, path: "/apis"}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ServerResources reads the resources one group version serves (GET
// /apis/GROUP/VERSION): their names, kind, scope, verbs, short names and
// categories.
func (c *Client) ServerResources(ctx context.Context, gv schema.GroupVersion) (*metav1.APIResourceList, error) {
	out := &metav1.APIResourceList{}
	if err := c.call(ctx, &request{method: http.MethodGet, path: "/apis/" + gv.String()}, out); err != nil {
		return nil, err
	}
	return out, nil
}
