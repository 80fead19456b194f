package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/openapi"
)

// The API server publishes its schemas twice, as kube-apiserver does.
// OpenAPI v3 is a root document listing one document per group version,
// each with the schemas of its kinds (and of everything they hold),
// generated from the Go types with their comments as descriptions
// (api/openapi), and each kind's object path with a PATCH operation that
// names its kind and takes fieldValidation. OpenAPI v2 (openapiv2.go) is
// one Swagger document with the same schemas and paths.
//
// kubectl reads v3 for most things. kubectl explain shows a kind's fields,
// found by the x-kubernetes-group-version-kind of its schema. kubectl
// create and apply, since 1.27, skip their own validation of a manifest
// and leave it to the server when its PATCH operations take
// fieldValidation, which berth's decoder honours. A `kind: List` has no
// such operation, so kubectl validates each of its items itself, against
// the v2 schemas, and without them fails the whole List. No PATCH
// operation says which patch types it takes (v3's requestBody, v2's
// consumes), so kubectl apply still computes its patches from its
// built-in types, or as merge patches for berth's own kinds: the schemas
// carry no merge keys, and a strategic patch made from them would replace
// lists that berth merges by key (strategic.go).

// openAPIDocs holds the OpenAPI v3 root and group version documents.
type openAPIDocs struct {
	root []byte
	gvs  map[string][]byte // "api/v1", "apis/apps/v1"
	// rootPaths are the root's entries, by group version.
	rootPaths map[string]map[string]string
}

// openAPIDefinition is a schema of api/openapi and the model names of
// the schemas it refers to.
type openAPIDefinition struct {
	Schema       json.RawMessage `json:"schema"`
	Dependencies []string        `json:"dependencies"`
}

// openAPIDefinitions are the schemas of api/openapi, by model name.
type openAPIDefinitions map[string]openAPIDefinition

// readOpenAPIDefinitions reads the embedded schemas.
func readOpenAPIDefinitions() (openAPIDefinitions, error) {
	var defs openAPIDefinitions
	if err := json.Unmarshal(openapi.DefinitionsJSON, &defs); err != nil {
		return nil, fmt.Errorf("openapi definitions: %w", err)
	}
	return defs, nil
}

// kindModelName is the model name of a kind's schema.
func kindModelName(k *api.Kind) string {
	return openapi.TypeModelName(reflect.TypeOf(k.New()).Elem())
}

// schemasOf returns the schemas of kinds and of every type they refer
// to, by model name: what a document that serves those kinds holds.
func (defs openAPIDefinitions) schemasOf(kinds []*api.Kind) (map[string]json.RawMessage, error) {
	schemas := map[string]json.RawMessage{}
	var add func(model string)
	add = func(model string) {
		if _, done := schemas[model]; done {
			return
		}
		def, ok := defs[model]
		if !ok {
			return
		}
		schemas[model] = def.Schema
		for _, dep := range def.Dependencies {
			add(dep)
		}
	}
	for _, k := range kinds {
		model := kindModelName(k)
		add(model)
		if _, ok := schemas[model]; !ok {
			return nil, fmt.Errorf("openapi definitions: no schema for %s", model)
		}
	}
	return schemas, nil
}

// openAPIGroupVersionPath is where a kind's group version document is
// under /openapi/v3: "api/v1", "apis/apps/v1".
func openAPIGroupVersionPath(k *api.Kind) string {
	if k.GVK.Group == "" {
		return "api/" + k.GVK.Version
	}
	return "apis/" + k.GVK.Group + "/" + k.GVK.Version
}

// openAPIPath is a kind's object path in either document, with a PATCH
// operation that names its kind and takes fieldValidation: kubectl finds
// the operation of a manifest's kind by its x-kubernetes-group-version-kind
// and, seeing the parameter, leaves validation to the server.
type openAPIPath struct {
	Patch openAPIOperation `json:"patch"`
}

// openAPIOperation is the PATCH operation of an openAPIPath.
type openAPIOperation struct {
	GVK        map[string]string `json:"x-kubernetes-group-version-kind"`
	Parameters []openAPIParam    `json:"parameters"`
	Responses  map[string]any    `json:"responses"`
}

// openAPIParam is a query parameter: v3 gives its type in a schema
// (Schema), v2 beside its name (Type, UniqueItems).
type openAPIParam struct {
	Name        string            `json:"name"`
	In          string            `json:"in"`
	Schema      map[string]string `json:"schema,omitempty"`
	Type        string            `json:"type,omitempty"`
	UniqueItems bool              `json:"uniqueItems,omitempty"`
}

// openAPIPaths returns the object paths of kinds, by path
// ("/api/v1/namespaces/{namespace}/pods/{name}"), with fieldValidation
// as the document's version spells it.
func openAPIPaths(kinds []*api.Kind, fieldValidation openAPIParam) map[string]openAPIPath {
	paths := map[string]openAPIPath{}
	for _, k := range kinds {
		p := "/" + openAPIGroupVersionPath(k)
		if k.Namespaced {
			p += "/namespaces/{namespace}"
		}
		paths[p+"/"+k.Resource+"/{name}"] = openAPIPath{Patch: openAPIOperation{
			GVK:        map[string]string{"group": k.GVK.Group, "version": k.GVK.Version, "kind": k.GVK.Kind},
			Parameters: []openAPIParam{fieldValidation},
			Responses:  map[string]any{"200": map[string]string{"description": "OK"}},
		}}
	}
	return paths
}

func newOpenAPIDocs(version string) (*openAPIDocs, error) {
	type doc struct {
		OpenAPI    string                 `json:"openapi"`
		Info       map[string]string      `json:"info"`
		Paths      map[string]openAPIPath `json:"paths"`
		Components map[string]any         `json:"components"`
	}
	defs, err := readOpenAPIDefinitions()
	if err != nil {
		return nil, err
	}
	kinds := map[string][]*api.Kind{}
	var order []string
	for _, k := range api.Kinds() {
		gv := openAPIGroupVersionPath(k)
		if kinds[gv] == nil {
			order = append(order, gv)
		}
		kinds[gv] = append(kinds[gv], k)
	}
	o := &openAPIDocs{gvs: map[string][]byte{}, rootPaths: map[string]map[string]string{}}
	for _, gv := range order {
		schemas, err := defs.schemasOf(kinds[gv])
		if err != nil {
			return nil, err
		}
		d := doc{
			OpenAPI:    "3.0.0",
			Info:       map[string]string{"title": "berth", "version": version},
			Paths:      openAPIPaths(kinds[gv], openAPIParam{Name: "fieldValidation", In: "query", Schema: map[string]string{"type": "string"}}),
			Components: map[string]any{"schemas": schemas},
		}
		b, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		o.gvs[gv] = b
		o.rootPaths[gv] = openAPIRootEntry(gv, b)
	}
	o.root, err = json.Marshal(map[string]any{"paths": o.rootPaths})
	return o, err
}

// serveOpenAPIV3 answers /openapi/v3 and /openapi/v3/<group version>.
func (s *Server) serveOpenAPIV3(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		WriteError(w, methodNotAllowed(nil, r.Method))
		return
	}
	docs, err := s.openAPIV3Docs()
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
