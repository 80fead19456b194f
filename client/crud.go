package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// Media types of the patches Patch sends.
const (
	MergePatch     = "application/merge-patch+json"
	StrategicPatch = "application/strategic-merge-patch+json"
	JSONPatch      = "application/json-patch+json"
)

// ListOptions select what List and Watch return.
type ListOptions struct {
	// LabelSelector, as "app=web,tier!=db".
	LabelSelector string
	// FieldSelector on metadata.name, metadata.namespace, spec.nodeName,
	// status.phase (and a few more per kind), as "spec.nodeName=n1".
	FieldSelector string
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.LabelSelector != "" {
		q.Set("labelSelector", o.LabelSelector)
	}
	if o.FieldSelector != "" {
		q.Set("fieldSelector", o.FieldSelector)
	}
	return q
}

// kindOf finds the registered kind of an object the caller built.
func kindOf(obj api.Object) (*api.Kind, error) {
	k := api.KindOf(obj)
	if k == nil {
		return nil, fmt.Errorf("client: %T is not a kind berth serves", obj)
	}
	return k, nil
}

// decodeObject decodes an object of kind k leniently (a newer server may
// add fields) and sets its type.
func decodeObject(k *api.Kind, data []byte) (api.Object, error) {
	obj := k.New()
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, fmt.Errorf("decode %s: %w", k.GVK.Kind, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(k.GVK)
	return obj, nil
}

func (c *Client) object(ctx context.Context, k *api.Kind, r *request) (api.Object, error) {
	obj := k.New()
	if err := c.call(ctx, r, obj); err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(k.GVK)
	return obj, nil
}

// Get reads one object.
func (c *Client) Get(ctx context.Context, k *api.Kind, namespace, name string) (api.Object, error) {
	return c.object(ctx, k, &request{method: http.MethodGet, path: ResourcePath(k, namespace, name, "")})
}

// List reads the objects of a kind in a namespace (every namespace when
// empty) that the options select, and the revision to watch from.
func (c *Client) List(ctx context.Context, k *api.Kind, namespace string, opts ListOptions) ([]api.Object, string, error) {
	var items []api.Object
	rv, err := c.ListEach(ctx, k, namespace, opts, func(o api.Object) error {
		items = append(items, o)
		return nil
	})
	return items, rv, err
}

// ListEach is List one object at a time, as the server streams them, so
// that a large list need not sit in memory twice. An error from fn ends
// the list with it.
//
// Config.Timeout bounds the wait for the list to start; reading it is
// bounded by ctx alone, as a large list streams for as long as it takes.
func (c *Client) ListEach(ctx context.Context, k *api.Kind, namespace string, opts ListOptions, fn func(api.Object) error) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timer *time.Timer
	if c.timeout > 0 {
		timer = time.AfterFunc(c.timeout, cancel)
	}
	resp, err := c.send(ctx, &request{method: http.MethodGet, path: ResourcePath(k, namespace, "", ""), query: opts.query(), stream: true})
	if timer != nil && !timer.Stop() && err == nil {
		resp.Body.Close()
		err = fmt.Errorf("list %s: no answer within %s", k.Resource, c.timeout)
	}
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	rv, err := decodeList(resp.Body, k, fn)
	if err != nil {
		return "", fmt.Errorf("list %s: %w", k.Resource, err)
	}
	return rv, nil
}

// decodeList reads a list document token by token: its metadata, and its
// items one by one.
func decodeList(r io.Reader, k *api.Kind, fn func(api.Object) error) (string, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return "", err
	}
	rv := ""
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		key, _ := tok.(string)
		switch key {
		case "metadata":
			var meta metav1.ListMeta
			if err := dec.Decode(&meta); err != nil {
				return "", err
			}
			rv = meta.ResourceVersion
		case "items":
			if err := expectDelim(dec, '['); err != nil {
				if err == errNull {
					continue
				}
				return "", err
			}
			for dec.More() {
				obj := k.New()
				if err := dec.Decode(obj); err != nil {
					return "", err
				}
				obj.GetObjectKind().SetGroupVersionKind(k.GVK)
				if err := fn(obj); err != nil {
					return "", err
				}
			}
			if _, err := dec.Token(); err != nil {
				return "", err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", err
			}
		}
	}
	return rv, nil
}

var errNull = fmt.Errorf("null")

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return errNull
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("expected %q, got %v", d, tok)
	}
	return nil
}

func (c *Client) write(ctx context.Context, method string, obj api.Object, subresource string) (api.Object, error) {
	k, err := kindOf(obj)
	if err != nil {
		return nil, err
	}
	return c.writeAs(ctx, k, method, obj, subresource)
}

func (c *Client) writeAs(ctx context.Context, k *api.Kind, method string, obj api.Object, subresource string) (api.Object, error) {
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	name := obj.GetName()
	if method == http.MethodPost {
		name = ""
	}
	return c.object(ctx, k, &request{
		method:      method,
		path:        ResourcePath(k, obj.GetNamespace(), name, subresource),
		body:        body,
		contentType: "application/json",
		create:      method == http.MethodPost && subresource == "",
	})
}

// Create stores a new object and returns it as stored. A namespaced
// object without a namespace goes to "default".
func (c *Client) Create(ctx context.Context, obj api.Object) (api.Object, error) {
	if k, err := kindOf(obj); err == nil && k.Namespaced && obj.GetNamespace() == "" {
		return c.createIn(ctx, k, api.NamespaceDefault, obj)
	}
	return c.write(ctx, http.MethodPost, obj, "")
}

func (c *Client) createIn(ctx context.Context, k *api.Kind, namespace string, obj api.Object) (api.Object, error) {
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return c.object(ctx, k, &request{method: http.MethodPost, path: ResourcePath(k, namespace, "", ""), body: body, contentType: "application/json", create: true})
}

// CreateAs is Create of an object of kind k, which the process need not
// have registered: a custom resource of a CRD the caller read from a
// manifest, say, which the server serves once the CRD is in.
func (c *Client) CreateAs(ctx context.Context, k *api.Kind, obj api.Object) (api.Object, error) {
	if k.Namespaced && obj.GetNamespace() == "" {
		return c.createIn(ctx, k, api.NamespaceDefault, obj)
	}
	return c.writeAs(ctx, k, http.MethodPost, obj, "")
}

// UpdateAs is Update of an object of kind k (see CreateAs).
func (c *Client) UpdateAs(ctx context.Context, k *api.Kind, obj api.Object) (api.Object, error) {
	return c.writeAs(ctx, k, http.MethodPut, obj, "")
}

// Update replaces an object's spec and metadata (its status is kept); with
// a resourceVersion set, a stale one is a conflict (IsConflict).
func (c *Client) Update(ctx context.Context, obj api.Object) (api.Object, error) {
	return c.write(ctx, http.MethodPut, obj, "")
}

// UpdateStatus replaces an object's status (nothing else changes).
func (c *Client) UpdateStatus(ctx context.Context, obj api.Object) (api.Object, error) {
	return c.write(ctx, http.MethodPut, obj, "status")
}

// Patch applies a JSON merge patch (RFC 7386) to an object.
func (c *Client) Patch(ctx context.Context, k *api.Kind, namespace, name string, patch []byte) (api.Object, error) {
	return c.PatchAs(ctx, k, namespace, name, "", MergePatch, patch)
}

// PatchStatus applies a JSON merge patch to an object's status.
func (c *Client) PatchStatus(ctx context.Context, k *api.Kind, namespace, name string, patch []byte) (api.Object, error) {
	return c.PatchAs(ctx, k, namespace, name, "status", MergePatch, patch)
}

// PatchAs applies a patch of any type the server takes (MergePatch,
// StrategicPatch, JSONPatch) to an object or its subresource.
func (c *Client) PatchAs(ctx context.Context, k *api.Kind, namespace, name, subresource, patchType string, patch []byte) (api.Object, error) {
	return c.object(ctx, k, &request{
		method:      http.MethodPatch,
		path:        ResourcePath(k, namespace, name, subresource),
		body:        patch,
		contentType: patchType,
	})
}

// Delete deletes an object, with options (nil: the defaults). It returns
// the object as it last stood: an object that must finish first (a
// running pod, one with finalizers) comes back with its
// deletionTimestamp set and goes later.
func (c *Client) Delete(ctx context.Context, k *api.Kind, namespace, name string, opts *metav1.DeleteOptions) (api.Object, error) {
	r := &request{method: http.MethodDelete, path: ResourcePath(k, namespace, name, "")}
	if opts != nil {
		o := *opts
		o.TypeMeta = metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "v1"}
		body, err := json.Marshal(&o)
		if err != nil {
			return nil, err
		}
		r.body, r.contentType = body, "application/json"
	}
	return c.object(ctx, k, r)
}
