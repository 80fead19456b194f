package api

import (
	"fmt"
)

// objectKey identifies an object in the store: two manifests with the same
// key would overwrite each other.
//
// +kubebuilder:object:generate=false
type objectKey struct {
	group, kind, namespace, name string
}

// Duplicates reports every object that appears more than once (same kind,
// namespace and name) among decoded objects, at the later place, naming
// the earlier one: a revision with two versions of an object has no single
// meaning. Run it after Default, so that an object with no namespace and
// one with `namespace: default` are seen to be the same.
func Duplicates(objs []*Decoded) ErrorList {
	return duplicates(objs, false)
}

// DuplicatesAsDefaulted is Duplicates as it would report once Default had
// placed every namespaced object that names no namespace in "default",
// without changing the objects: a source checks the objects it shares
// with its decode cache, which must stay as decoded.
func DuplicatesAsDefaulted(objs []*Decoded) ErrorList {
	return duplicates(objs, true)
}

func duplicates(objs []*Decoded, defaulted bool) ErrorList {
	seen := make(map[objectKey]*Decoded, len(objs))
	var errs ErrorList
	for _, d := range objs {
		if d.Object == nil {
			continue
		}
		k := d.Kind()
		if k == nil {
			continue
		}
		key := objectKey{group: k.GVK.Group, kind: k.GVK.Kind, namespace: d.Object.GetNamespace(), name: d.Object.GetName()}
		if defaulted && k.Namespaced && key.namespace == "" {
			key.namespace = NamespaceDefault
		}
		first, ok := seen[key]
		if !ok {
			seen[key] = d
			continue
		}
		e := d.errorAt("metadata.name", fmt.Sprintf("Duplicate value: %q: %s is also defined at %s", key.name, objectName(key), first.Location()))
		errs = append(errs, e)
	}
	return errs
}

func objectName(k objectKey) string {
	if k.namespace == "" {
		return k.kind + "/" + k.name
	}
	return k.kind + "/" + k.namespace + "/" + k.name
}
