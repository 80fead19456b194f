package patch

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kjson "sigs.k8s.io/json"
)

// The media types of a PATCH body.
const (
	MergePatchType     = "application/merge-patch+json"
	StrategicPatchType = "application/strategic-merge-patch+json"
	JSONPatchType      = "application/json-patch+json"
)

// MaxJSONPatchOperations is kube-apiserver's bound on the operations of
// one JSON patch.
const MaxJSONPatchOperations = 10000

// MaxCopyBytes bounds what the "copy" operations of one JSON patch may add
// to the document, kube-apiserver's default (its largest request body):
// each copy can double the document, so a patch of a few kilobytes could
// otherwise grow without end.
const MaxCopyBytes = 3 << 20

var copyLimit sync.Once

// limitCopies sets evanphx/json-patch's copy limit, a variable of the
// package, unless something else in the process set one already.
func limitCopies() {
	copyLimit.Do(func() {
		atomic.CompareAndSwapInt64(&jsonpatch.AccumulatedCopySizeLimit, 0, MaxCopyBytes)
	})
}

// Merge applies an RFC 7386 JSON merge patch to doc.
func Merge(doc, patch []byte) ([]byte, error) {
	out, err := jsonpatch.MergePatch(doc, patch)
	if err != nil {
		// kube-apiserver answers a patch that is no JSON object 400, as
		// here; berth answers the rest 400 too: they are all the patch's.
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return out, nil
}

// JSON applies an RFC 6902 JSON patch to doc: 400 for a patch that does
// not decode, 413 beyond MaxJSONPatchOperations, 422 for an operation that
// does not apply (a failed test among them).
func JSON(doc, patch []byte) ([]byte, error) {
	limitCopies()
	ops, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(ops) > MaxJSONPatchOperations {
		return nil, apierrors.NewRequestEntityTooLargeError(
			fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", MaxJSONPatchOperations, len(ops)))
	}
	out, err := ops.Apply(doc)
	if err != nil {
		return nil, unprocessable(err)
	}
	return out, nil
}

// Strategic applies a strategic merge patch to doc, merging the lists that
// schema's patch strategies name item by item (containers by name, ports by
// containerPort…) and honouring the directives ($patch, $retainKeys,
// $setElementOrder, $deleteFromPrimitiveList), as kube-apiserver does for
// the Kubernetes type schema describes.
func Strategic(doc, patch []byte, schema strategicpatch.LookupPatchMeta) ([]byte, error) {
	var patchMap map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(patch, &patchMap); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if patchMap == nil {
		return nil, apierrors.NewBadRequest(mergepatch.ErrBadJSONDoc.Error())
	}
	var docMap map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(doc, &docMap); err != nil {
		return nil, err
	}
	out, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(docMap, patchMap, schema)
	if err != nil {
		return nil, strategicError(err)
	}
	return json.Marshal(out)
}

// strategicError is kube-apiserver's reading of a strategicpatch error: a
// malformed patch is 400, one that does not fit the object 422. What
// kube-apiserver leaves a 500 (a field the type does not have, a list
// where a map should be) is the patch's fault all the same: 422 here.
func strategicError(err error) error {
	switch {
	case errors.Is(err, mergepatch.ErrBadJSONDoc), errors.Is(err, mergepatch.ErrBadPatchFormatForPrimitiveList),
		errors.Is(err, mergepatch.ErrBadPatchFormatForRetainKeys), errors.Is(err, mergepatch.ErrBadPatchFormatForSetElementOrderList),
		errors.Is(err, mergepatch.ErrUnsupportedStrategicMergePatchFormat):
		return apierrors.NewBadRequest(err.Error())
	default:
		return unprocessable(err)
	}
}

// unprocessable is the 422 kube-apiserver answers a patch that does not
// apply with, the library's error as its cause; berth gives the cause as
// the message too, so that a user reads what went wrong where kubectl
// would print only "the server rejected our request".
func unprocessable(err error) error {
	se := apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	se.ErrStatus.Message = err.Error()
	return se
}
