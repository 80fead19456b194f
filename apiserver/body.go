package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver/auth"
)

// presizeLimit bounds the buffer a body's declared length reserves.
const presizeLimit = 1 << 20

// readBody reads a request body, at most MaxBodyBytes of it (413 beyond),
// within bodyReadTimeout of now.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	// One buffer of the declared length (and room to see the end), rather
	// than io.ReadAll's doublings: every write reads a body. A length
	// declared but not sent allocates at most presizeLimit.
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), presizeLimit)+bytes.MinRead))
	if err := CopyBody(w, r, buf, s.cfg.MaxBodyBytes); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CopyBody copies a request body to dst, at most limit bytes of it (a 413
// Status error beyond, at once when the declared length is over), within
// bodyReadTimeout of now: the server has no read timeout, for watches'
// sake, so a body gets one. A handler that only needs to hash a body (a
// webhook's signature) copies it into the hash rather than hold it.
func CopyBody(w http.ResponseWriter, r *http.Request, dst io.Writer, limit int64) error {
	if r.ContentLength > limit {
		return bodyTooLarge(limit)
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyReadTimeout))
	if _, err := io.Copy(dst, http.MaxBytesReader(w, r.Body, limit)); err != nil {
		if isTooLarge(err) {
			return bodyTooLarge(limit)
		}
		return badRequest("reading the request body: %v", err)
	}
	return nil
}

// checkObjectContentType accepts the media types an object body may have.
func checkObjectContentType(r *http.Request) error {
	switch ct := contentType(r); ct {
	case "", mediaJSON, mediaYAML, "application/x-yaml", "text/yaml", mediaProtobuf:
		return nil
	default:
		return unsupportedMediaType(ct, mediaJSON, mediaYAML)
	}
}

// readObjectBody reads the body of a create or update as JSON or YAML,
// converting a protobuf one.
func (s *Server) readObjectBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := checkObjectContentType(r); err != nil {
		return nil, err
	}
	data, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	if contentType(r) == mediaProtobuf {
		return protobufToJSON(data)
	}
	return data, nil
}

// readObject reads and decodes the body of a create or update: one object
// of the path's kind (see decodeBody), under the request's
// fieldValidation, whose warnings go to the answer's headers.
func (s *Server) readObject(w http.ResponseWriter, r *http.Request, req *resourceRequest) (api.Object, error) {
	validation, err := fieldValidationOf(r)
	if err != nil {
		return nil, err
	}
	data, err := s.readObjectBody(w, r)
	if err != nil {
		return nil, err
	}
	obj, warnings, err := req.decodeBody(data, contentType(r) == mediaJSON, validation)
	addWarnings(w, warnings)
	return obj, err
}

// fieldValidationOf reads a write's fieldValidation parameter (kubectl's
// --validate): Strict, Warn or Ignore, as Kubernetes takes it. Without one
// a write is Strict, where Kubernetes' default is Warn: an unknown field
// is as often a typo or a field berth does not run as a field of a newer
// version, and either way it is named rather than dropped; a client that
// wants it dropped says so (kubectl apply --validate=false).
func fieldValidationOf(r *http.Request) (string, error) {
	if r.URL.RawQuery == "" {
		return "", nil // an agent's status write: no query to parse
	}
	v := r.URL.Query().Get("fieldValidation")
	switch v {
	case "", metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore:
		return v, nil
	}
	return "", badRequest("fieldValidation: Unsupported value: %q: supported values: %q, %q, %q",
		v, metav1.FieldValidationIgnore, metav1.FieldValidationStrict, metav1.FieldValidationWarn)
}

// addWarnings adds a Warning header (299, as Kubernetes sends them; kubectl
// prints "Warning: " and the text) for each warning of a request.
func addWarnings(w http.ResponseWriter, warnings []string) {
	for _, text := range warnings {
		if h, err := utilnet.NewWarningHeader(299, "-", text); err == nil {
			w.Header().Add("Warning", h)
		}
	}
}

// checkJSON refuses a body sent as JSON that is not JSON, before the
// decoder, which also reads YAML, would call it bad YAML.
func checkJSON(data []byte) error {
	if json.Valid(data) {
		return nil
	}
	var v json.RawMessage
	if err := json.Unmarshal(data, &v); err != nil {
		return badRequest("the request body is not valid JSON: %v", err)
	}
	return nil
}

// decodeBody decodes a request body that must hold one object of the
// path's kind, with the one decoder every source and `berth validate` use:
// strict, so an unknown or duplicate field, a value of the wrong type or a
// missing kind is a 400 naming every such field. With fieldValidation
// (validation) Warn or Ignore, unknown and duplicate fields pass instead,
// with Warn each a warning. A body sent as JSON that is not JSON is
// refused as such.
func (req *resourceRequest) decodeBody(data []byte, sentAsJSON bool, validation string) (api.Object, []string, error) {
	k := req.kind
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, badRequest("the request body is empty: it must hold a %s", k.GVK.Kind)
	}
	if k.Custom {
		if sentAsJSON {
			if err := checkJSON(data); err != nil {
				return nil, nil, err
			}
		}
		return req.decodeCustomBody(data, validation)
	}
	if obj, ok := req.decodeJSONObject(data); ok {
		return obj, nil, nil // it decoded, so it is JSON: checkJSON need not scan it
	}
	if sentAsJSON {
		if err := checkJSON(data); err != nil {
			return nil, nil, err
		}
	}
	objs, errs := api.DecodeStream("", withTypeMeta(k, data), api.DecodeOptions{DropStatus: req.ignoresStatus(), FieldValidation: validation})
	if len(errs) > 0 {
		return nil, nil, decodeFailed(k, errs)
	}
	if len(objs) != 1 || objs[0].Field != "" {
		return nil, nil, badRequest("the request body must hold exactly one %s, not a list or a stream of objects", k.GVK.Kind)
	}
	obj := objs[0].Object
	if got := api.KindOf(obj); got != k {
		return nil, nil, badRequest("the object in the request body is a %s (%s), not a %s (%s): send it to the %s resource",
			got.GVK.Kind, got.APIVersion(), k.GVK.Kind, k.APIVersion(), got.Resource)
	}
	return obj, objs[0].Warnings, nil
}

// ignoresStatus reports whether the request's write drops the body's
// status (a create, but of a Node, and a write to the object rather than
// its status): the decoder then leaves it out, so that a status copied
// from elsewhere (kubectl expose sends a Service's status.loadBalancer)
// cannot fail the request.
func (req *resourceRequest) ignoresStatus() bool {
	if req.subresource != "" {
		return false
	}
	if req.verb == auth.VerbCreate {
		return req.kind.GVK.Kind != "Node"
	}
	return true
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
