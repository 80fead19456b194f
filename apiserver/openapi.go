package apiserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/berth-dev/berth/api"
)

// kubectl create and apply validate a manifest before sending it. Since
// kubectl 1.27 they skip their own validation, and leave it to the
// server, when the server's OpenAPI v3 document says its PATCH operations
// take the fieldValidation parameter; otherwise they download the OpenAPI
// v2 schemas and fail without them. berth's decoder does that validation
// (strict unless a write's fieldValidation says Warn or Ignore), so it
// serves just that much OpenAPI v3: one document per group version
// listing each kind's object path with a PATCH operation that names its
// kind and takes fieldValidation. There are no schemas: `kubectl explain`
// has nothing to show, and kubectl apply computes its patches from its
// built-in types (or as merge patches for berth's own kinds).

// openAPIDocs holds the OpenAPI v3 root and group version documents.
type openAPIDocs struct {
	root []byte
	gvs  map[string][]byte // "api/v1", "apis/apps/v1"
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
	for _, k := range api.Kinds() {
		gvPath := "api/" + k.GVK.Version
		if k.GVK.Group != "" {
			gvPath = "apis/" + k.GVK.Group + "/" + k.GVK.Version
		}
		d := docs[gvPath]
		if d == nil {
			d = &doc{OpenAPI: "3.0.0", Info: map[string]string{"title": "berth", "version": version}, Paths: map[string]pathItem{}, Components: map[string]any{}}
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
	var err error
	o.root, err = json.Marshal(root)
	return o, err
}

// serveOpenAPIV3 answers /openapi/v3 and /openapi/v3/<group version>.
func (s *Server) serveOpenAPIV3(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		WriteError(w, methodNotAllowed(nil, r.Method))
		return
	}
	p := strings.Trim(strings.TrimPrefix(r.URL.Path, "/openapi/v3"), "/")
	body := s.openapi.root
	if p != "" {
		body = s.openapi.gvs[p]
	}
	if body == nil {
		WriteError(w, notFoundPath())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
