package apiserver

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Kubernetes' strategic merge patch merges some lists item by item, by a
// key its Go types declare (patchMergeKey). berth's types declare none, so
// the keys of the lists kubectl patches are listed here by field name.
// Without them `kubectl set image` or `kubectl apply` would replace a whole
// container list with the one changed container.

// mergeKeys names, by list field, the keys that identify its items; the
// first key every patch item has is used (container ports by
// containerPort, service ports by port).
var mergeKeys = map[string][]string{
	"containers":          {"name"},
	"initContainers":      {"name"},
	"ephemeralContainers": {"name"},
	"volumes":             {"name"},
	"env":                 {"name"},
	"imagePullSecrets":    {"name"},
	"volumeMounts":        {"mountPath"},
	"ports":               {"containerPort", "port"},
	"conditions":          {"type"},
	"ownerReferences":     {"uid"},
	"taints":              {"key"},
	"addresses":           {"type"},
	"hostAliases":         {"ip"},
}

// mergedPrimitives are lists of scalars that a strategic patch merges as
// sets rather than replaces.
var mergedPrimitives = map[string]bool{"finalizers": true}

// strategicMergePatch applies a strategic merge patch as described above.
func strategicMergePatch(doc, patch []byte) ([]byte, error) {
	p, err := decodeJSON(patch)
	if err != nil {
		return nil, badRequest("the strategic merge patch is not valid JSON: %v", err)
	}
	pm, ok := p.(map[string]any)
	if !ok {
		return nil, badRequest("a strategic merge patch must be a JSON object")
	}
	d, err := decodeJSON(doc)
	if err != nil {
		return nil, err
	}
	dm, _ := d.(map[string]any)
	out, err := strategicMap(dm, pm)
	if err != nil {
		return nil, badRequest("strategic merge patch: %v", err)
	}
	return json.Marshal(out)
}

// strategicMap merges a patch object into target (which it may change).
// It returns nil when the patch deletes the object ($patch: delete).
func strategicMap(target, patch map[string]any) (map[string]any, error) {
	switch d := patch["$patch"]; d {
	case nil, "merge":
	case "replace":
		return strategicMap(nil, withoutKey(patch, "$patch"))
	case "delete":
		return nil, nil
	default:
		return nil, fmt.Errorf("unknown $patch directive %v", d)
	}
	if target == nil {
		target = map[string]any{}
	}
	var (
		retain    []any
		hasRetain bool
		orders    = map[string][]any{}
		removals  = map[string][]any{}
	)
	for k, v := range patch {
		switch {
		case k == "$patch":
		case k == "$retainKeys":
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("$retainKeys must be a list")
			}
			retain, hasRetain = list, true
		case strings.HasPrefix(k, "$setElementOrder/"):
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s must be a list", k)
			}
			orders[strings.TrimPrefix(k, "$setElementOrder/")] = list
		case strings.HasPrefix(k, "$deleteFromPrimitiveList/"):
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s must be a list", k)
			}
			removals[strings.TrimPrefix(k, "$deleteFromPrimitiveList/")] = list
		case strings.HasPrefix(k, "$"):
			return nil, fmt.Errorf("unknown directive %q", k)
		case v == nil:
			delete(target, k)
		default:
			nv, err := strategicField(k, target[k], v)
			if err != nil {
				return nil, err
			}
			if nv == nil {
				delete(target, k)
			} else {
				target[k] = nv
			}
		}
	}
	for field, values := range removals {
		list, _ := target[field].([]any)
		target[field] = filterList(list, func(x any) bool { return !containsValue(values, x) })
	}
	for field, order := range orders {
		if list, ok := target[field].([]any); ok {
			target[field] = reorder(list, order, keyOf(field, order))
		}
	}
	if hasRetain {
		for k := range target {
			if !containsValue(retain, k) {
				delete(target, k)
			}
		}
	}
	return target, nil
}

func strategicField(name string, target, patch any) (any, error) {
	switch p := patch.(type) {
	case map[string]any:
		t, _ := target.(map[string]any)
		m, err := strategicMap(t, p)
		if m == nil || err != nil {
			return nil, err
		}
		return m, nil
	case []any:
		return strategicList(name, target, p)
	}
	return patch, nil
}

// strategicList merges a patch list into the target list of field name.
func strategicList(name string, target any, patch []any) (any, error) {
	tl, _ := target.([]any)
	if mergedPrimitives[name] {
		out := append([]any{}, tl...)
		for _, v := range patch {
			if !containsValue(out, v) {
				out = append(out, v)
			}
		}
		return out, nil
	}
	key := keyOf(name, patch)
	if key == "" {
		// Replaced whole, directives inside items dropped.
		out := make([]any, 0, len(patch))
		for _, v := range patch {
			if m, ok := v.(map[string]any); ok {
				mm, err := strategicMap(nil, m)
				if err != nil {
					return nil, err
				}
				if mm == nil {
					continue
				}
				v = mm
			}
			out = append(out, v)
		}
		return out, nil
	}
	out := append([]any{}, tl...)
	for _, v := range patch {
		pm := v.(map[string]any)
		if pm["$patch"] == "replace" && len(pm) == 1 {
			// {"$patch": "replace"} as an item: the list is the patch's.
			return strategicList("", nil, withoutReplaceMarker(patch))
		}
		i := indexByKey(out, key, pm[key])
		if pm["$patch"] == "delete" {
			if i >= 0 {
				out = append(out[:i], out[i+1:]...)
			}
			continue
		}
		var cur map[string]any
		if i >= 0 {
			cur, _ = out[i].(map[string]any)
		}
		merged, err := strategicMap(cur, pm)
		if err != nil {
			return nil, err
		}
		switch {
		case merged == nil && i >= 0:
			out = append(out[:i], out[i+1:]...)
		case merged == nil:
		case i >= 0:
			out[i] = merged
		default:
			out = append(out, merged)
		}
	}
	return out, nil
}

// keyOf finds the merge key of a list field that every item of items has;
// "" when the list is not merged by key.
func keyOf(name string, items []any) string {
	for _, key := range mergeKeys[name] {
		ok := len(items) > 0
		for _, v := range items {
			m, isMap := v.(map[string]any)
			if !isMap {
				ok = false
				break
			}
			if _, has := m[key]; !has && !(len(m) == 1 && m["$patch"] == "replace") {
				ok = false
				break
			}
		}
		if ok {
			return key
		}
	}
	return ""
}

func indexByKey(list []any, key string, value any) int {
	want := fmt.Sprint(value)
	for i, v := range list {
		if m, ok := v.(map[string]any); ok {
			if kv, has := m[key]; has && fmt.Sprint(kv) == want {
				return i
			}
		}
	}
	return -1
}

// reorder puts list in the order of order ($setElementOrder), by key for
// lists of objects; items the order does not name keep their place after.
func reorder(list, order []any, key string) []any {
	out := make([]any, 0, len(list))
	used := make([]bool, len(list))
	for _, o := range order {
		for i, v := range list {
			if used[i] {
				continue
			}
			if key != "" {
				om, _ := o.(map[string]any)
				vm, _ := v.(map[string]any)
				if om == nil || vm == nil || fmt.Sprint(om[key]) != fmt.Sprint(vm[key]) {
					continue
				}
			} else if fmt.Sprint(o) != fmt.Sprint(v) {
				continue
			}
			used[i] = true
			out = append(out, v)
			break
		}
	}
	for i, v := range list {
		if !used[i] {
			out = append(out, v)
		}
	}
	return out
}

func withoutKey(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func withoutReplaceMarker(list []any) []any {
	return filterList(list, func(v any) bool {
		m, ok := v.(map[string]any)
		return !(ok && len(m) == 1 && m["$patch"] == "replace")
	})
}

func filterList(list []any, keep func(any) bool) []any {
	out := make([]any, 0, len(list))
	for _, v := range list {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

func containsValue(list []any, v any) bool {
	s := fmt.Sprint(v)
	for _, x := range list {
		if fmt.Sprint(x) == s {
			return true
		}
	}
	return false
}
