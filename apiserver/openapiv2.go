package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"

	"github.com/berth-dev/berth/api"
)

// OpenAPI v2 is one Swagger 2.0 document: the schemas of every kind, as
// the v3 documents hold them, under definitions, and each kind's object
// path with the PATCH operation the v3 documents give it. kubectl asks
// for it as the protobuf of gnostic's openapi_v2.Document, which
// kube-apiserver makes from the JSON as berth does here, and reads it to
// validate the items of a List.

// Media types of the v2 document's protobuf. client-go asks by the name
// with "@", which kube-apiserver deprecated for the other, the one it
// names its answer with; both are answered.
const (
	mediaOpenAPIV2Protobuf           = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mediaOpenAPIV2ProtobufDeprecated = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
)

// openAPIV2Doc is the v2 document, as JSON and as protobuf, and what it
// was encoded from.
type openAPIV2Doc struct {
	json, protobuf []byte
	source         openAPIV2Source
}

// openAPIV2Source is the v2 document before it is encoded: the custom
// kinds' definitions and paths are added to the built-in ones.
type openAPIV2Source struct {
	Swagger     string                    `json:"swagger"`
	Info        map[string]string         `json:"info"`
	Paths       map[string]any            `json:"paths"`
	Definitions map[string]map[string]any `json:"definitions"`
}

// openAPIV3RefPrefix starts every reference in api/openapi's schemas,
// which v2 spells "#/definitions/".
const openAPIV3RefPrefix = "#/components/schemas/"

// openAPIV2Schema turns a schema of api/openapi into its v2 form: a type
// with a schema of its own for v2 (x-kubernetes-v2-schema: IntOrString
// and Quantity, which are a oneOf in v3 and a string here) gets it, as
// kube-openapi's v2 builder does, and references point into definitions.
func openAPIV2Schema(raw json.RawMessage) (map[string]any, error) {
	var s map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	if v2, ok := s["x-kubernetes-v2-schema"].(map[string]any); ok {
		s = v2
	}
	return s, openAPIV2Refs(s)
}

// openAPIV2Refs rewrites the references of a schema and of the schemas
// it holds (properties, items, additionalProperties, allOf and the like)
// in place.
func openAPIV2Refs(s map[string]any) error {
	if ref, ok := s["$ref"].(string); ok {
		model, ok := strings.CutPrefix(ref, openAPIV3RefPrefix)
		if !ok {
			return fmt.Errorf("reference %q is not to %s…", ref, openAPIV3RefPrefix)
		}
		s["$ref"] = "#/definitions/" + model
	}
	var subs []any
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			subs = append(subs, p)
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		subs = append(subs, s[k])
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if l, ok := s[k].([]any); ok {
			subs = append(subs, l...)
		}
	}
	for _, sub := range subs {
		if m, ok := sub.(map[string]any); ok {
			if err := openAPIV2Refs(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// newOpenAPIV2Doc builds the v2 document of a server of this version.
func newOpenAPIV2Doc(version string) (*openAPIV2Doc, error) {
	defs, err := readOpenAPIDefinitions()
	if err != nil {
		return nil, err
	}
	schemas, err := defs.schemasOf(api.Kinds())
	if err != nil {
		return nil, err
	}
	d := openAPIV2Source{
		Swagger:     "2.0",
		Info:        map[string]string{"title": "berth", "version": version},
		Paths:       map[string]any{},
		Definitions: map[string]map[string]any{},
	}
	for p, item := range openAPIPaths(api.Kinds(), openAPIParam{Name: "fieldValidation", In: "query", Type: "string", UniqueItems: true}) {
		d.Paths[p] = item
	}
	for model, raw := range schemas {
		if d.Definitions[model], err = openAPIV2Schema(raw); err != nil {
			return nil, fmt.Errorf("openapi v2: %s: %w", model, err)
		}
	}
	return encodeOpenAPIV2(d)
}

// encodeOpenAPIV2 encodes a v2 document as JSON and as protobuf.
func encodeOpenAPIV2(d openAPIV2Source) (*openAPIV2Doc, error) {
	o := &openAPIV2Doc{source: d}
	var err error
	if o.json, err = json.Marshal(d); err != nil {
		return nil, err
	}
	parsed, err := openapi_v2.ParseDocument(o.json)
	if err != nil {
		return nil, fmt.Errorf("openapi v2: %w", err)
	}
	if o.protobuf, err = proto.Marshal(parsed); err != nil {
		return nil, fmt.Errorf("openapi v2: %w", err)
	}
	return o, nil
}

// negotiateOpenAPIV2 picks the form of the v2 document the first entry
// of the Accept header it can produce asks for, with its media type: JSON
// (for no Accept too) or protobuf. With none, 406.
func negotiateOpenAPIV2(r *http.Request, doc *openAPIV2Doc) (body []byte, contentType string, err error) {
	header := r.Header.Get("Accept")
	for _, m := range parseAccept(header) {
		switch {
		case m.jsonLike():
			return doc.json, mediaJSON, nil
		case m.typ == mediaOpenAPIV2Protobuf, m.typ == mediaOpenAPIV2ProtobufDeprecated:
			return doc.protobuf, mediaOpenAPIV2Protobuf, nil
		}
	}
	return nil, "", notAcceptable(header, mediaJSON, mediaOpenAPIV2ProtobufDeprecated)
}

// serveOpenAPIV2 answers /openapi/v2.
func (s *Server) serveOpenAPIV2(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		WriteError(w, methodNotAllowed(nil, r.Method))
		return
	}
	doc, err := s.openAPIV2Document()
	if err != nil {
		WriteError(w, err)
		return
	}
	body, contentType, err := negotiateOpenAPIV2(r, doc)
	w.Header().Add("Vary", "Accept")
	if err != nil {
		WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", contentType)
	_, _ = w.Write(body)
}
