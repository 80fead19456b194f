package apiserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/berth-dev/berth/api"
)

// The schemas of custom kinds are published beside the built-in ones, as
// kube-apiserver publishes them: each served version of a CRD is built
// into its own document by apiextensions-apiserver's builder (the kind
// with apiVersion, kind and metadata added to its structural schema, its
// list, and every operation of its paths), the documents of one group
// version are merged into the group version's v3 document, and all of
// them into the v2 document. The documents follow the CRDs: they are
// built again, on the next request for them, when a CRD of this server's
// store changes, and a changed v3 document gets a new hash in the root,
// by which kubectl drops what it cached.

// customOpenAPI is what the documents were last built from, and them.
type customOpenAPI struct {
	// gen is the generation of the custom kinds, as discovery keeps it.
	gen   [2]uint64
	built bool
	v3    *openAPIDocs
	v2    *openAPIV2Doc
}

// servedCustomKinds are the custom kinds of this server's store, with the
// generation they were listed at.
func (s *Server) servedCustomKinds() ([]*api.Kind, [2]uint64) {
	gen := [2]uint64{api.CustomGeneration(), s.store.KindRevision(crdKind)}
	var custom []*api.Kind
	for _, k := range api.CustomKinds() {
		if s.servesCustom(k) {
			custom = append(custom, k)
		}
	}
	return custom, gen
}

// openAPIV3Docs returns the v3 documents: the built-in ones, with those
// of the custom kinds merged in.
func (s *Server) openAPIV3Docs() (*openAPIDocs, error) {
	base, err := s.openapi()
	if err != nil {
		return nil, err
	}
	return customDocs(s, func(c *customOpenAPI) **openAPIDocs { return &c.v3 }, func(kinds []*api.Kind) (*openAPIDocs, error) {
		return base.withCustom(kinds)
	})
}

// openAPIV2Document returns the v2 document likewise.
func (s *Server) openAPIV2Document() (*openAPIV2Doc, error) {
	base, err := s.openapiV2()
	if err != nil {
		return nil, err
	}
	return customDocs(s, func(c *customOpenAPI) **openAPIV2Doc { return &c.v2 }, func(kinds []*api.Kind) (*openAPIV2Doc, error) {
		return base.withCustom(kinds)
	})
}

// customDocs returns a document of the custom kinds served now: the one
// cached (field) while they are those it was built from, or one built
// anew.
func customDocs[D any](s *Server, field func(*customOpenAPI) **D, build func([]*api.Kind) (*D, error)) (*D, error) {
	kinds, gen := s.servedCustomKinds()
	s.openapiCustomMu.Lock()
	defer s.openapiCustomMu.Unlock()
	c := &s.openapiCustom
	if !c.built || c.gen != gen {
		*c = customOpenAPI{gen: gen, built: true}
	}
	if d := *field(c); d != nil {
		return d, nil
	}
	d, err := build(kinds)
	if err != nil {
		return nil, err
	}
	*field(c) = d
	return d, nil
}

// withCustom returns the v3 documents with those of kinds added: a group
// version of custom kinds alone gets a document of its own; one that
// built-in kinds already serve keeps theirs (a CRD cannot take a
// built-in group's names).
func (o *openAPIDocs) withCustom(kinds []*api.Kind) (*openAPIDocs, error) {
	if len(kinds) == 0 {
		return o, nil
	}
	byGV := map[string][]*spec3.OpenAPI{}
	for _, k := range kinds {
		for _, v := range k.Versions {
			gv := "apis/" + k.GVK.Group + "/" + v
			if _, builtin := o.gvs[gv]; builtin {
				continue
			}
			doc, err := builder.BuildOpenAPIV3(k.CRD, v, builder.Options{IncludeSelectableFields: true})
			if err != nil {
				return nil, fmt.Errorf("openapi v3 of %s version %s: %w", k.CRD.Name, v, err)
			}
			byGV[gv] = append(byGV[gv], doc)
		}
	}
	out := &openAPIDocs{gvs: maps.Clone(o.gvs), rootPaths: maps.Clone(o.rootPaths)}
	for gv, docs := range byGV {
		merged, err := builder.MergeSpecsV3(docs...)
		if err != nil {
			return nil, fmt.Errorf("openapi v3 of %s: %w", gv, err)
		}
		b, err := json.Marshal(merged)
		if err != nil {
			return nil, fmt.Errorf("openapi v3 of %s: %w", gv, err)
		}
		out.gvs[gv] = b
		out.rootPaths[gv] = openAPIRootEntry(gv, b)
	}
	root, err := json.Marshal(map[string]any{"paths": out.rootPaths})
	if err != nil {
		return nil, err
	}
	out.root = root
	return out, nil
}

// openAPIRootEntry is a group version's entry in the v3 root: where its
// document is, with a hash of it that changes when it does.
func openAPIRootEntry(gv string, doc []byte) map[string]string {
	sum := sha256.Sum256(doc)
	return map[string]string{"serverRelativeURL": "/openapi/v3/" + gv + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:16]))}
}

// withCustom returns the v2 document with the definitions and paths of
// kinds added, built as kube-apiserver builds them for v2 (value
// validations and nullable stripped, which v2 cannot say). A name the
// built-in document has keeps its built-in entry: the apimachinery types
// every CRD's document refers to are there already.
func (d *openAPIV2Doc) withCustom(kinds []*api.Kind) (*openAPIV2Doc, error) {
	if len(kinds) == 0 {
		return d, nil
	}
	var docs []*spec.Swagger
	for _, k := range kinds {
		for _, v := range k.Versions {
			doc, err := builder.BuildOpenAPIV2(k.CRD, v, builder.Options{V2: true, StripValueValidation: true, StripNullable: true})
			if err != nil {
				return nil, fmt.Errorf("openapi v2 of %s version %s: %w", k.CRD.Name, v, err)
			}
			docs = append(docs, doc)
		}
	}
	merged, err := builder.MergeSpecs(&spec.Swagger{SwaggerProps: spec.SwaggerProps{Paths: &spec.Paths{}}}, docs...)
	if err != nil {
		return nil, fmt.Errorf("openapi v2: %w", err)
	}
	raw, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("openapi v2: %w", err)
	}
	var custom struct {
		Paths       map[string]any            `json:"paths"`
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &custom); err != nil {
		return nil, fmt.Errorf("openapi v2: %w", err)
	}
	src := d.source
	src.Paths = maps.Clone(src.Paths)
	src.Definitions = maps.Clone(src.Definitions)
	for p, item := range custom.Paths {
		if _, ok := src.Paths[p]; !ok {
			src.Paths[p] = item
		}
	}
	for name, def := range custom.Definitions {
		if _, ok := src.Definitions[name]; !ok {
			src.Definitions[name] = def
		}
	}
	return encodeOpenAPIV2(src)
}
