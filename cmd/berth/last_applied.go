package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/berth-dev/berth/api"
)

// appliedDocument is the manifest side of an apply: the object as JSON
// without status (a manifest does not own it), without its last-applied
// annotation, and without the nulls Go writes for unset times, which a
// manifest never means.
func appliedDocument(k *api.Kind, obj api.Object) (map[string]any, error) {
	doc, err := objectDocument(k, obj)
	if err != nil {
		return nil, err
	}
	delete(doc, "status")
	if meta, ok := doc["metadata"].(map[string]any); ok {
		if ann, ok := meta["annotations"].(map[string]any); ok {
			delete(ann, api.AnnotationLastAppliedConfig)
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	pruneNulls(doc)
	return doc, nil
}

func pruneNulls(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			pruneNulls(v)
		case []any:
			for _, item := range v {
				if im, ok := item.(map[string]any); ok {
					pruneNulls(im)
				}
			}
		}
	}
}

// applyPlan is what applying a manifest to a live object comes to.
type applyPlan struct {
	// desired is the object to create (live is nil) or to write back.
	desired api.Object
	// changed is false when the live object already is what applying
	// would make it: nothing is written and apply says "unchanged".
	changed bool
}

// planApply merges a manifest into the live object three ways, as kubectl
// apply does with JSON merge patch semantics: what the manifest sets wins,
// what the last applied manifest set and the new one does not is removed,
// and what neither set is kept as it is live. Lists are replaced whole.
// The result carries the live resourceVersion, so a concurrent change
// makes the update fail with a conflict instead of being lost.
func planApply(k *api.Kind, manifest, live api.Object) (applyPlan, error) {
	modified, err := appliedDocument(k, manifest)
	if err != nil {
		return applyPlan{}, err
	}
	raw, err := json.Marshal(modified)
	if err != nil {
		return applyPlan{}, err
	}
	setAnnotation(modified, api.AnnotationLastAppliedConfig, string(raw))
	if live == nil {
		obj, err := fromDocument(k, modified)
		return applyPlan{desired: obj, changed: true}, err
	}

	current, err := objectDocument(k, live)
	if err != nil {
		return applyPlan{}, err
	}
	var original map[string]any
	if last := live.GetAnnotations()[api.AnnotationLastAppliedConfig]; last != "" {
		dec := json.NewDecoder(bytes.NewReader([]byte(last)))
		dec.UseNumber()
		if err := dec.Decode(&original); err != nil {
			// A mangled annotation only costs the removal of fields
			// dropped from the manifest; the rest of apply still holds.
			original = nil
		}
	}
	merged := mergeThreeWay(current, modified, original)
	if reflect.DeepEqual(merged, current) {
		return applyPlan{desired: live, changed: false}, nil
	}
	obj, err := fromDocument(k, merged)
	return applyPlan{desired: obj, changed: true}, err
}

// mergeThreeWay returns current changed by modified: keys modified sets
// are set (maps merged key by key), keys original had and modified has
// not are removed, and the rest of current is kept.
func mergeThreeWay(current, modified, original map[string]any) map[string]any {
	out := make(map[string]any, len(current)+len(modified))
	for k, v := range current {
		out[k] = v
	}
	for k := range original {
		if _, ok := modified[k]; !ok {
			delete(out, k)
		}
	}
	for k, mv := range modified {
		cm, cok := out[k].(map[string]any)
		mm, mok := mv.(map[string]any)
		if cok && mok {
			om, _ := original[k].(map[string]any)
			out[k] = mergeThreeWay(cm, mm, om)
			continue
		}
		out[k] = mv
	}
	return out
}

func setAnnotation(doc map[string]any, key, value string) {
	meta, _ := doc["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		doc["metadata"] = meta
	}
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann[key] = value
}

// fromDocument turns a document back into a typed object of the kind.
func fromDocument(k *api.Kind, doc map[string]any) (api.Object, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	obj := k.New()
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, fmt.Errorf("decode merged %s: %w", k, err)
	}
	return obj, nil
}
