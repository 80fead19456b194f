package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/patch"
)

// PATCH takes four body types:
//
//   - application/merge-patch+json: RFC 7386 JSON merge patch;
//   - application/strategic-merge-patch+json, what kubectl apply, edit,
//     label and set image send: merged by the patch strategies of
//     Kubernetes' own Go type of the kind (containers, volumes, env by
//     name, ports by containerPort, and so on), with its directives;
//   - application/json-patch+json: RFC 6902 JSON patch;
//   - application/apply-patch+yaml: server-side apply (see apply.go).
//
// Package patch applies the first three as kube-apiserver does.
//
// The patched document is decoded like a PUT body (strictly, unless
// fieldValidation says Warn or Ignore), and then takes the update path.

// servePatch answers PATCH on an object or its status.
func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	ct := contentType(r)
	var apply func(doc, patch []byte) ([]byte, error)
	switch ct {
	case mediaMergePatch:
		apply = patch.Merge
	case mediaStrategicPatch:
		var err error
		if apply, err = strategicPatchOf(req); err != nil {
			WriteError(w, err)
			return
		}
	case mediaJSONPatch:
		apply = patch.JSON
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
	body, err := s.readBody(w, r)
	if err != nil {
		WriteError(w, err)
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		WriteError(w, badRequest("the patch is empty"))
		return
	}
	conditional := patchSetsResourceVersion(ct, body)
	var warnings []string // of the last attempt
	out, err := s.update(r, req, conditional, func(old api.Object) (api.Object, error) {
		doc, err := json.Marshal(old)
		if err != nil {
			return nil, err
		}
		patched, err := apply(doc, body)
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
func patchSetsResourceVersion(ct string, body []byte) bool {
	if ct == mediaJSONPatch {
		return false
	}
	var p struct {
		Metadata struct {
			ResourceVersion *string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	return json.Unmarshal(body, &p) == nil && p.Metadata.ResourceVersion != nil && *p.Metadata.ResourceVersion != ""
}

// strategicPatchOf is the strategic merge patch of the path's kind, with
// the patch strategies of Kubernetes' type of the kind. A custom resource
// has none: kube-apiserver answers its strategic patch 415, and so does
// berth.
func strategicPatchOf(req *resourceRequest) (func(doc, body []byte) ([]byte, error), error) {
	if req.kind.Custom {
		return nil, unsupportedMediaType(mediaStrategicPatch, mediaMergePatch, mediaJSONPatch, mediaApplyPatch)
	}
	meta, err := patch.SchemaOf(req.kind.GVK, req.kind.New())
	if err != nil {
		return nil, err
	}
	return func(doc, body []byte) ([]byte, error) { return patch.Strategic(doc, body, meta) }, nil
}
