package client

import (
	"context"
	"net/http"

	"github.com/berth-dev/berth/api"
)

// StoreInfo reads the identity of the control plane's store (api.StorePath).
// A server from before stores had one answers NotFound.
func (c *Client) StoreInfo(ctx context.Context) (api.StoreInfo, error) {
	var out api.StoreInfo
	err := c.call(ctx, &request{method: http.MethodGet, path: api.StorePath}, &out)
	return out, err
}
