package patch

import (
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// schemas caches the patch strategies by group, version and kind.
var schemas sync.Map // schema.GroupVersionKind → strategicpatch.LookupPatchMeta

// SchemaOf returns the patch strategies of the kind gvk names: those of
// Kubernetes' own Go type of that group, version and kind, whose tags
// (patchStrategy, patchMergeKey) kube-apiserver merges by, so that berth
// merges what `kubectl apply` and `kubectl set image` send as Kubernetes
// does. A kind of berth's own has no such type; obj's type stands in, and
// its lists are replaced whole.
func SchemaOf(gvk schema.GroupVersionKind, obj any) (strategicpatch.LookupPatchMeta, error) {
	if s, ok := schemas.Load(gvk); ok {
		return s.(strategicpatch.LookupPatchMeta), nil
	}
	ref := obj
	if typed, err := clientgoscheme.Scheme.New(gvk); err == nil {
		ref = typed
	}
	if ref == nil || reflect.TypeOf(ref).Kind() != reflect.Pointer {
		return nil, fmt.Errorf("strategic merge patch: no schema for %s", gvk)
	}
	s, err := strategicpatch.NewPatchMetaFromStruct(ref)
	if err != nil {
		return nil, fmt.Errorf("strategic merge patch: %s: %w", gvk, err)
	}
	schemas.Store(gvk, s)
	return s, nil
}
