package api

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sjson "sigs.k8s.io/json"
)

// validateRest validates what of a document did decode when some of its
// values are of the wrong type, so that the user sees every error of the
// document at once rather than the decode errors alone, as Kubernetes'
// strict decoding and validation report them together. The values that
// failed (failed, their field paths) are set to null, the rest decoded
// again, defaulted and validated; an error at a failed field, inside it or
// around it is left out, since the field it would judge is not the one the
// document holds, and so is a Duplicate, which the null may have made. It gives up (reports nothing more) when the rest does
// not decode cleanly either.
func validateRest(body []byte, kind *Kind, failed []string, problem func(path, msg string)) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var tree any
	if dec.Decode(&tree) != nil {
		return
	}
	for _, p := range failed {
		if !setNull(tree, splitPath(p)) {
			return
		}
	}
	rest, err := json.Marshal(tree)
	if err != nil {
		return
	}
	obj := kind.New()
	if _, err := sjson.UnmarshalStrict(rest, obj); err != nil {
		return
	}
	obj.GetObjectKind().SetGroupVersionKind(kind.GVK)
	Default(obj)
	for _, fe := range Validate(obj) {
		path := fe.Field
		if path == "<nil>" {
			path = ""
		}
		// A duplicate may be the null standing for a failed value (two
		// ports that are both 0 now): it is judged once the value decodes.
		if fe.Type != field.ErrorTypeDuplicate && !nearAny(path, failed) {
			problem(path, oneLine(fe.ErrorBody()))
		}
	}
}

// setNull sets the value at the path in a JSON tree to null, reporting
// whether the path led to one.
func setNull(tree any, segs []pathSegment) bool {
	if len(segs) == 0 {
		return false
	}
	cur := tree
	for i, seg := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			if _, ok := c[seg.name]; !ok {
				return false
			}
			if last {
				c[seg.name] = nil
				return true
			}
			cur = c[seg.name]
		case []any:
			n, err := strconv.Atoi(seg.name)
			if !seg.subscript || err != nil || n < 0 || n >= len(c) {
				return false
			}
			if last {
				c[n] = nil
				return true
			}
			cur = c[n]
		default:
			return false
		}
	}
	return false
}

// nearAny reports whether path is one of paths, inside one, encloses one,
// or is in the same list item as one: the null of a failed field changes
// how its siblings default and validate (a port of 0 leaves targetPort
// without its default).
func nearAny(path string, paths []string) bool {
	for _, p := range paths {
		if within(path, itemOf(p)) || within(p, path) {
			return true
		}
	}
	return false
}

// itemOf is the list item a field path is a field of ("spec.ports[0]" for
// "spec.ports[0].port"), or the path itself when its parent is no list
// item.
func itemOf(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i > 0 && path[i] == '.' && path[i-1] == ']' {
		return path[:i]
	}
	return path
}

// within reports whether path is outer or a field inside it.
func within(path, outer string) bool {
	if outer == "" || path == outer {
		return true
	}
	return strings.HasPrefix(path, outer) && (path[len(outer)] == '.' || path[len(outer)] == '[')
}
