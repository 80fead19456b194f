package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/berth-dev/berth/api"
)

// PATCH takes four body types:
//
//   - application/merge-patch+json: RFC 7386 JSON merge patch;
//   - application/strategic-merge-patch+json, what kubectl apply, edit,
//     label and set image send: berth has no per-field patch strategies
//     in its types, so it applies a merge patch that also knows
//     Kubernetes' merge keys for the lists kubectl patches (containers,
//     volumes, env and ports by name or port, and so on) and its
//     directives ($patch, $setElementOrder, $retainKeys,
//     $deleteFromPrimitiveList); see strategic.go;
//   - application/json-patch+json: RFC 6902 JSON patch;
//   - application/apply-patch+yaml: server-side apply (see apply.go).
//
// The patched document is decoded like a PUT body (strictly, unless
// fieldValidation says Warn or Ignore), and then takes the update path.

// servePatch answers PATCH on an object or its status.
func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	ct := contentType(r)
	var apply func(doc, patch []byte) ([]byte, error)
	switch ct {
	case mediaMergePatch:
		apply = mergePatch
	case mediaStrategicPatch:
		apply = strategicMergePatch
	case mediaJSONPatch:
		apply = jsonPatch
	case mediaApplyPatch:
		s.serveApply(w, r, req)
		return
	default:
		WriteError(w, unsupportedMediaType(ct, mediaMergePatch, mediaStrategicPatch, mediaJSONPatch, mediaApplyPatch))
		return
	}
	validation, err := fieldValidationOf(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	patch, err := s.readBody(w, r)
	if err != nil {
		WriteError(w, err)
		return
	}
	if len(bytes.TrimSpace(patch)) == 0 {
		WriteError(w, badRequest("the patch is empty"))
		return
	}
	conditional := patchSetsResourceVersion(ct, patch)
	var warnings []string // of the last attempt
	out, err := s.update(r, req, conditional, func(old api.Object) (api.Object, error) {
		doc, err := json.Marshal(old)
		if err != nil {
			return nil, err
		}
		patched, err := apply(doc, patch)
		if err != nil {
			return nil, err
		}
		obj, ws, err := req.decodeBody(patched, false, validation)
		warnings = ws
		if err != nil {
			return nil, err
		}
		if err := checkIdentity(req, obj); err != nil {
			return nil, err
		}
		return obj, nil
	})
	addWarnings(w, warnings)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeStored(w, http.StatusOK, req.served(out))
}

// patchSetsResourceVersion reports whether a merge or strategic patch sets
// metadata.resourceVersion, which makes it conditional (409 when stale),
// as in Kubernetes; a JSON patch is conditional through a "test" on it.
func patchSetsResourceVersion(ct string, patch []byte) bool {
	if ct == mediaJSONPatch {
		return false
	}
	var p struct {
		Metadata struct {
			ResourceVersion *string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	return json.Unmarshal(patch, &p) == nil && p.Metadata.ResourceVersion != nil && *p.Metadata.ResourceVersion != ""
}

// decodeJSON parses JSON keeping numbers exact (int64 fields survive).
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errTrailingData
	}
	return v, nil
}

// mergePatch applies an RFC 7386 JSON merge patch to doc.
func mergePatch(doc, patch []byte) ([]byte, error) {
	p, err := decodeJSON(patch)
	if err != nil {
		return nil, badRequest("the merge patch is not valid JSON: %v", err)
	}
	if _, ok := p.(map[string]any); !ok {
		return nil, badRequest("a merge patch must be a JSON object")
	}
	d, err := decodeJSON(doc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(mergeValue(d, p))
}

// mergeValue merges patch into target (RFC 7386 §2): objects merge key by
// key, null deletes, anything else replaces.
func mergeValue(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergeValue(tm[k], v)
	}
	return tm
}
