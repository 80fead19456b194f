package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/berth-dev/berth/api"
)

// readBody reads a request body, at most MaxBodyBytes of it (413 beyond),
// within bodyReadTimeout of now.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > s.cfg.MaxBodyBytes {
		return nil, bodyTooLarge(s.cfg.MaxBodyBytes)
	}
	// The server has no read timeout, for watches' sake; a body gets one.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyReadTimeout))
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		if isTooLarge(err) {
			return nil, bodyTooLarge(s.cfg.MaxBodyBytes)
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	return data, nil
}

// checkObjectContentType accepts the media types an object body may have.
func checkObjectContentType(r *http.Request) error {
	switch ct := contentType(r); ct {
	case "", mediaJSON, mediaYAML, "application/x-yaml", "text/yaml":
		return nil
	default:
		return unsupportedMediaType(ct, mediaJSON, mediaYAML)
	}
}

// checkJSON refuses a body sent as JSON that is not JSON, before the
// decoder, which also reads YAML, would call it bad YAML.
func checkJSON(r *http.Request, data []byte) error {
	if ct := contentType(r); ct != mediaJSON {
		return nil
	}
	var v json.RawMessage
	if err := json.Unmarshal(data, &v); err != nil && len(bytes.TrimSpace(data)) > 0 {
		return badRequest("the request body is not valid JSON: %v", err)
	}
	return nil
}

// decodeBody decodes a request body that must hold one object of the
// path's kind, with the one decoder every source and `berth validate` use:
// strict, so an unknown or duplicate field, a value of the wrong type or a
// missing kind is a 400 naming every such field.
func decodeBody(k *api.Kind, data []byte) (api.Object, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, badRequest("the request body is empty: it must hold a %s", k.GVK.Kind)
	}
	objs, errs := api.DecodeStream("", withTypeMeta(k, data), api.DecodeOptions{})
	if len(errs) > 0 {
		return nil, decodeFailed(k, errs)
	}
	if len(objs) != 1 || objs[0].Field != "" {
		return nil, badRequest("the request body must hold exactly one %s, not a list or a stream of objects", k.GVK.Kind)
	}
	obj := objs[0].Object
	if got := api.KindOf(obj); got != k {
		return nil, badRequest("the object in the request body is a %s (%s), not a %s (%s): send it to the %s resource",
			got.GVK.Kind, got.APIVersion(), k.GVK.Kind, k.APIVersion(), got.Resource)
	}
	return obj, nil
}

// withTypeMeta fills in apiVersion and kind from the path when a JSON body
// has neither, as Kubernetes allows; a body with one of them is left for
// the decoder to judge.
func withTypeMeta(k *api.Kind, data []byte) []byte {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return data
	}
	var head struct {
		APIVersion *json.RawMessage `json:"apiVersion"`
		Kind       *json.RawMessage `json:"kind"`
	}
	if json.Unmarshal(data, &head) != nil || head.APIVersion != nil || head.Kind != nil {
		return data
	}
	rest := bytes.TrimLeft(trimmed[1:], " \t\r\n")
	out := make([]byte, 0, len(data)+64)
	out = append(out, `{"apiVersion":"`+k.APIVersion()+`","kind":"`+k.GVK.Kind+`"`...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}
