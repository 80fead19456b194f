package api

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// jsonFields maps the JSON names of a struct's fields, inlined ones
// flattened, to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// missingFields lists, by path, the JSON fields of theirs that ours lacks,
// recursing into the types both hold.
func missingFields(path string, theirs, ours reflect.Type, seen map[[2]reflect.Type]bool) []string {
	for theirs.Kind() == reflect.Pointer || theirs.Kind() == reflect.Slice || theirs.Kind() == reflect.Map {
		if ours.Kind() != theirs.Kind() {
			return []string{path + ": " + ours.String() + " is not a " + theirs.Kind().String()}
		}
		theirs, ours = theirs.Elem(), ours.Elem()
	}
	if theirs == ours {
		return nil
	}
	if theirs.Kind() != reflect.Struct {
		if theirs.Kind() != ours.Kind() {
			return []string{path + ": " + ours.String() + " is not a " + theirs.Kind().String()}
		}
		return nil
	}
	if ours.Kind() != reflect.Struct {
		return []string{path + ": " + ours.String() + " is not a struct"}
	}
	key := [2]reflect.Type{theirs, ours}
	if seen[key] {
		return nil
	}
	seen[key] = true
	of := jsonFields(ours)
	var missing []string
	for name, tt := range jsonFields(theirs) {
		ot, ok := of[name]
		if !ok {
			missing = append(missing, path+"."+name)
			continue
		}
		missing = append(missing, missingFields(path+"."+name, tt, ot, seen)...)
	}
	return missing
}

// TestPodHoldsEveryField checks that berth's Pod has every field of
// Kubernetes' core/v1 Pod, at every depth, so that no manifest Kubernetes
// takes is refused for an unknown field.
func TestPodHoldsEveryField(t *testing.T) {
	for _, c := range []struct {
		name         string
		theirs, ours reflect.Type
	}{
		{"Pod", reflect.TypeFor[corev1.Pod](), reflect.TypeFor[Pod]()},
		{"PodTemplateSpec", reflect.TypeFor[corev1.PodTemplateSpec](), reflect.TypeFor[PodTemplateSpec]()},
		{"Service", reflect.TypeFor[corev1.Service](), reflect.TypeFor[Service]()},
	} {
		for _, m := range missingFields(c.name, c.theirs, c.ours, map[[2]reflect.Type]bool{}) {
			t.Errorf("missing %s", m)
		}
	}
}
