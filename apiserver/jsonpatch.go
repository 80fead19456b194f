package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RFC 6902 JSON patch, for `kubectl patch --type=json`.

var errTrailingData = errors.New("unexpected data after the JSON value")

type jsonPatchOp struct {
	Op    string           `json:"op"`
	Path  *string          `json:"path"`
	From  *string          `json:"from"`
	Value *json.RawMessage `json:"value"`
}

// jsonPatch applies an RFC 6902 patch to doc.
func jsonPatch(doc, patch []byte) ([]byte, error) {
	var ops []jsonPatchOp
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, badRequest("the JSON patch is not a list of operations: %v", err)
	}
	d, err := decodeJSON(doc)
	if err != nil {
		return nil, err
	}
	for i, op := range ops {
		if op.Path == nil {
			return nil, badRequest("JSON patch operation %d: no path", i)
		}
		path, err := parsePointer(*op.Path)
		if err != nil {
			return nil, badRequest("JSON patch operation %d: %v", i, err)
		}
		var value any
		if op.Value != nil {
			if value, err = decodeJSON(*op.Value); err != nil {
				return nil, badRequest("JSON patch operation %d: value: %v", i, err)
			}
		} else if op.Op == "add" || op.Op == "replace" || op.Op == "test" {
			return nil, badRequest("JSON patch operation %d (%s): no value", i, op.Op)
		}
		var from []string
		if op.Op == "move" || op.Op == "copy" {
			if op.From == nil {
				return nil, badRequest("JSON patch operation %d (%s): no from", i, op.Op)
			}
			if from, err = parsePointer(*op.From); err != nil {
				return nil, badRequest("JSON patch operation %d: from: %v", i, err)
			}
		}
		switch op.Op {
		case "add":
			d, err = pointerAdd(d, path, value)
		case "remove":
			d, err = pointerRemove(d, path)
		case "replace":
			if _, err = pointerGet(d, path); err == nil {
				d, err = pointerRemove(d, path)
			}
			if err == nil {
				d, err = pointerAdd(d, path, value)
			}
		case "move":
			var v any
			if v, err = pointerGet(d, from); err == nil {
				if d, err = pointerRemove(d, from); err == nil {
					d, err = pointerAdd(d, path, v)
				}
			}
		case "copy":
			var v any
			if v, err = pointerGet(d, from); err == nil {
				d, err = pointerAdd(d, path, deepCopyJSON(v))
			}
		case "test":
			var v any
			if v, err = pointerGet(d, path); err == nil && !reflect.DeepEqual(v, value) {
				return nil, patchTestFailed(*op.Path)
			}
		default:
			return nil, badRequest("JSON patch operation %d: unknown op %q", i, op.Op)
		}
		if err != nil {
			return nil, badRequest("JSON patch operation %d (%s %s): %v", i, op.Op, *op.Path, err)
		}
	}
	return json.Marshal(d)
}

func patchTestFailed(path string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnprocessableEntity,
		Reason:  metav1.StatusReasonInvalid,
		Message: fmt.Sprintf("the JSON patch test of %s failed", path),
	}}
}

// parsePointer splits an RFC 6901 JSON pointer into its unescaped tokens.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("path %q does not start with /", p)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

func arrayIndex(tok string, n int, allowEnd bool) (int, error) {
	if allowEnd && tok == "-" {
		return n, nil
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 || (tok != "0" && tok[0] == '0') {
		return 0, fmt.Errorf("%q is not an array index", tok)
	}
	max := n - 1
	if allowEnd {
		max = n
	}
	if i > max {
		return 0, fmt.Errorf("index %d is out of range", i)
	}
	return i, nil
}

func pointerGet(doc any, path []string) (any, error) {
	cur := doc
	for _, tok := range path {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("no member %q", tok)
			}
			cur = v
		case []any:
			i, err := arrayIndex(tok, len(c), false)
			if err != nil {
				return nil, err
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%q: not an object or array", tok)
		}
	}
	return cur, nil
}

// pointerAdd returns doc with value added at path (RFC 6902 §4.1).
func pointerAdd(doc any, path []string, value any) (any, error) {
	if len(path) == 0 {
		return value, nil
	}
	tok := path[0]
	switch c := doc.(type) {
	case map[string]any:
		if len(path) == 1 {
			c[tok] = value
			return c, nil
		}
		child, ok := c[tok]
		if !ok {
			return nil, fmt.Errorf("no member %q", tok)
		}
		nc, err := pointerAdd(child, path[1:], value)
		if err != nil {
			return nil, err
		}
		c[tok] = nc
		return c, nil
	case []any:
		if len(path) == 1 {
			i, err := arrayIndex(tok, len(c), true)
			if err != nil {
				return nil, err
			}
			out := make([]any, 0, len(c)+1)
			out = append(append(append(out, c[:i]...), value), c[i:]...)
			return out, nil
		}
		i, err := arrayIndex(tok, len(c), false)
		if err != nil {
			return nil, err
		}
		nc, err := pointerAdd(c[i], path[1:], value)
		if err != nil {
			return nil, err
		}
		c[i] = nc
		return c, nil
	}
	return nil, fmt.Errorf("%q: not an object or array", tok)
}

// pointerRemove returns doc without the value at path (RFC 6902 §4.2).
func pointerRemove(doc any, path []string) (any, error) {
	if len(path) == 0 {
		return nil, errors.New("cannot remove the whole document")
	}
	tok := path[0]
	switch c := doc.(type) {
	case map[string]any:
		child, ok := c[tok]
		if !ok {
			return nil, fmt.Errorf("no member %q", tok)
		}
		if len(path) == 1 {
			delete(c, tok)
			return c, nil
		}
		nc, err := pointerRemove(child, path[1:])
		if err != nil {
			return nil, err
		}
		c[tok] = nc
		return c, nil
	case []any:
		i, err := arrayIndex(tok, len(c), false)
		if err != nil {
			return nil, err
		}
		if len(path) == 1 {
			return append(c[:i:i], c[i+1:]...), nil
		}
		nc, err := pointerRemove(c[i], path[1:])
		if err != nil {
			return nil, err
		}
		c[i] = nc
		return c, nil
	}
	return nil, fmt.Errorf("%q: not an object or array", tok)
}

func deepCopyJSON(v any) any {
	switch c := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(c))
		for k, x := range c {
			out[k] = deepCopyJSON(x)
		}
		return out
	case []any:
		out := make([]any, len(c))
		for i, x := range c {
			out[i] = deepCopyJSON(x)
		}
		return out
	}
	return v
}
