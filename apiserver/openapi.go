package apiserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/openapi"
)

// The API server publishes OpenAPI v3: a root document listing one
// document per group version, each with the schemas of its kinds (and of
// everything they hold), generated from the Go types with their comments
// as descriptions (api/openapi), and each kind's object path with a PATCH
// operation that names its kind and takes fieldValidation.
//
// kubectl reads them twice. kubectl explain shows a kind's fields, found
// by the x-kubernetes-group-version-kind of its schema. And kubectl create
// and apply, since 1.27, skip their own validation of a manifest and
// leave it to the server when its PATCH operations take fieldValidation,
// which berth's decoder honours; otherwise they would download the OpenAPI
// v2 schemas and fail without them. kubectl apply still computes its
// patches from its built-in types (or as merge patches for berth's own
// kinds).

// openAPIDocs holds the OpenAPI v3 root and group version documents.
type openAPIDocs struct {
	root []byte
	gvs  map[string][]byte // "api/v1", "apis/apps/v1"
}

// openAPIDefinition is a schema of api/openapi and the model names of
// the schemas it refers to.
type openAPIDefinition struct {
	Schema       json.RawMessage `json:"schema"`
	Dependencies []string        `json:"dependencies"`
}

// readOpenAPIDefinitions reads the embedded schemas, by model name.
func readOpenAPIDefinitions() (map[string]openAPIDefinition, error) {
	var defs map[string]openAPIDefinition
	if err := json.Unmarshal(openapi.DefinitionsJSON, &defs); err != nil {
		return nil, fmt.Errorf("openapi definitions: %w", err)
	}
	return defs, nil
}

// kindModelName is the model name of a kind's schema.
func kindModelName(k *api.Kind) string {
	return openapi.TypeModelName(reflect.TypeOf(k.New()).Elem())
}

// openAPISchemas returns, for each group version path, the schemas of its
// kinds and of every type they refer to, by model name.
func openAPISchemas() (map[string]map[string]json.RawMessage, error) {
	defs, err := readOpenAPIDefinitions()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]json.RawMessage{}
	var add func(schemas map[string]json.RawMessage, model string)
	add = func(schemas map[string]json.RawMessage, model string) {
		if _, done := schemas[model]; done {
			return
		}
		def, ok := defs[model]
		if !ok {
			return
		}
		schemas[model] = def.Schema
		for _, dep := range def.Dependencies {
			add(schemas, dep)
		}
	}
	for _, k := range api.Kinds() {
		gv := openAPIGroupVersionPath(k)
		if out[gv] == nil {
			out[gv] = map[string]json.RawMessage{}
		}
		model := kindModelName(k)
		add(out[gv], model)
		if _, ok := out[gv][model]; !ok {
			return nil, fmt.Errorf("openapi definitions: no schema for %s", model)
		}
	}
	return out, nil
}

// openAPIGroupVersionPath is where a kind's group version document is
// under /openapi/v3: "api/v1", "apis/apps/v1".
func openAPIGroupVersionPath(k *api.Kind) string {
	if k.GVK.Group == "" {
		return "api/" + k.GVK.Version
	}
	return "apis/" + k.GVK.Group + "/" + k.GVK.Version
}

func newOpenAPIDocs(version string) (*openAPIDocs, error) {
	type param struct {
		Name   string            `json:"name"`
		In     string            `json:"in"`
		Schema map[string]string `json:"schema"`
	}
	type operation struct {
		GVK        map[string]string `json:"x-kubernetes-group-version-kind"`
		Parameters []param           `json:"parameters"`
		Responses  map[string]any    `json:"responses"`
	}
	type pathItem struct {
		Patch *operation `json:"patch,omitempty"`
	}
	type doc struct {
		OpenAPI    string              `json:"openapi"`
		Info       map[string]string   `json:"info"`
		Paths      map[string]pathItem `json:"paths"`
		Components map[string]any      `json:"components"`
	}
	docs := map[string]*doc{}
	var order []string
	schemas, err := openAPISchemas()
	if err != nil {
		return nil, err
	}
	for _, k := range api.Kinds() {
		gvPath := openAPIGroupVersionPath(k)
		d := docs[gvPath]
		if d == nil {
			d = &doc{OpenAPI: "3.0.0", Info: map[string]string{"title": "berth", "version": version}, Paths: map[string]pathItem{}, Components: map[string]any{"schemas": schemas[gvPath]}}
			docs[gvPath] = d
			order = append(order, gvPath)
		}
		p := "/" + gvPath
		if k.Namespaced {
			p += "/namespaces/{namespace}"
		}
		p += "/" + k.Resource + "/{name}"
		d.Paths[p] = pathItem{Patch: &operation{
			GVK:        map[string]string{"group": k.GVK.Group, "version": k.GVK.Version, "kind": k.GVK.Kind},
			Parameters: []param{{Name: "fieldValidation", In: "query", Schema: map[string]string{"type": "string"}}},
			Responses:  map[string]any{"200": map[string]string{"description": "OK"}},
		}}
	}
	o := &openAPIDocs{gvs: map[string][]byte{}}
	root := map[string]map[string]map[string]string{"paths": {}}
	for _, gv := range order {
		b, err := json.Marshal(docs[gv])
		if err != nil {
			return nil, err
		}
		o.gvs[gv] = b
		sum := sha256.Sum256(b)
		root["paths"][gv] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gv + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:16]))}
	}
	o.root, err = json.Marshal(root)
	return o, err
}

// serveOpenAPIV3 answers /openapi/v3 and /openapi/v3/<group version>.
func (s *Server) serveOpenAPIV3(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		WriteError(w, methodNotAllowed(nil, r.Method))
		return
	}
	docs, err := s.openapi()
	if err != nil {
		WriteError(w, err)
		return
	}
	p := strings.Trim(strings.TrimPrefix(r.URL.Path, "/openapi/v3"), "/")
	body := docs.root
	if p != "" {
		body = docs.gvs[p]
	}
	if body == nil {
		WriteError(w, notFoundPath())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
