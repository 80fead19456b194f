package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/berth-dev/berth/api"
)

// Join trades the node join token (the client's token) for a node's own
// credential, and a serving certificate when req names addresses. The
// returned token authenticates as system:node:<req.NodeName>.
func (c *Client) Join(ctx context.Context, req api.JoinRequest) (api.JoinResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return api.JoinResponse{}, err
	}
	resp, err := c.Do(ctx, http.MethodPost, api.JoinPath, nil, body, "application/json")
	if err != nil {
		return api.JoinResponse{}, fmt.Errorf("join as node %s: %w", req.NodeName, err)
	}
	defer resp.Body.Close()
	var out api.JoinResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return api.JoinResponse{}, fmt.Errorf("join as node %s: decode answer: %w", req.NodeName, err)
	}
	if out.Token == "" {
		return api.JoinResponse{}, fmt.Errorf("join as node %s: the server issued no token", req.NodeName)
	}
	return out, nil
}
