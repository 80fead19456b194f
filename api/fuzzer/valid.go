package fuzzer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/berth-dev/berth/api"
)

// MakeValid trims from a random object (JSON of a kind berth serves) what
// berth's defaulting and validation refuse, one error at a time: it
// removes the field an error names, and when the same error comes back,
// the field's parent, then its grandparent, and so on. It never removes
// the object's metadata, spec or list of containers; an object it cannot
// make valid without one is an error. What is left is an object berth
// must take, and keep whole.
func MakeValid(data []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	seen := map[string]int{}
	for range 500 {
		data, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		obj, errs := api.DecodeObject(data, api.DecodeOptions{})
		if len(errs) > 0 {
			return nil, fmt.Errorf("decode: %v", errs)
		}
		api.Default(obj)
		ferrs := api.Validate(obj)
		if len(ferrs) == 0 {
			return data, nil
		}
		// Remove every field named, and one list element: removing one
		// shifts the indices of those after it. A field named again
		// after it was removed is removed with its parent.
		var element []any
		done := map[string]bool{}
		for _, fe := range ferrs {
			if done[fe.Field] {
				continue
			}
			path := parsePath(fe.Field)
			up := seen[fe.Field]
			if up >= len(path) {
				return nil, fmt.Errorf("cannot make valid: %v", fe)
			}
			path = path[:len(path)-up]
			if protected(path) {
				return nil, fmt.Errorf("cannot make valid without removing %s: %v", fe.Field, fe)
			}
			if _, isIndex := path[len(path)-1].(int); isIndex {
				if element != nil {
					continue
				}
				element = path
			} else {
				remove(doc, path)
			}
			done[fe.Field] = true
			seen[fe.Field]++
		}
		remove(doc, element)
	}
	return nil, fmt.Errorf("cannot make valid: too many errors")
}

// protected are the paths MakeValid never removes.
func protected(path []any) bool {
	switch len(path) {
	case 1:
		return true // metadata, spec
	case 2:
		return path[1] == "containers" || path[1] == "template" || path[1] == "selector"
	case 3:
		return path[2] == "spec" // a template's
	case 4:
		return path[3] == "containers"
	}
	return false
}

// parsePath splits a field path ("spec.containers[0].env[1].name",
// "metadata.labels[app]") into map keys (strings) and list indices (ints).
func parsePath(s string) []any {
	var out []any
	for s != "" {
		switch s[0] {
		case '.':
			s = s[1:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return out
			}
			key := s[1:end]
			if n, err := strconv.Atoi(key); err == nil {
				out = append(out, n)
			} else {
				out = append(out, key)
			}
			s = s[end+1:]
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			out = append(out, s[:end])
			s = s[end:]
		}
	}
	return out
}

// remove deletes the value at path, if there is one.
func remove(doc any, path []any) {
	if len(path) == 0 {
		return
	}
	parent := doc
	for _, p := range path[:len(path)-1] {
		parent = child(parent, p)
		if parent == nil {
			return
		}
	}
	switch c := parent.(type) {
	case map[string]any:
		if k, ok := path[len(path)-1].(string); ok {
			delete(c, k)
		}
	case []any:
		// A list element is removed by setting the list in its own
		// parent; do it through the grandparent.
		if i, ok := path[len(path)-1].(int); ok && i < len(c) {
			gp := doc
			for _, p := range path[:len(path)-2] {
				gp = child(gp, p)
			}
			list := append(c[:i:i], c[i+1:]...)
			switch g := gp.(type) {
			case map[string]any:
				g[path[len(path)-2].(string)] = list
			case []any:
				g[path[len(path)-2].(int)] = list
			}
		}
	}
}

func child(v any, p any) any {
	switch c := v.(type) {
	case map[string]any:
		if k, ok := p.(string); ok {
			return c[k]
		}
	case []any:
		if i, ok := p.(int); ok && i < len(c) {
			return c[i]
		}
	}
	return nil
}
