// Command gen writes the OpenAPI definitions openapi-gen made
// (internal/definitions) as JSON, by model name, with references between
// them as the API server's OpenAPI v3 documents spell them and each of
// berth's kinds marked with its group, version and kind, for package
// openapi to embed.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/openapi"
	"github.com/berth-dev/berth/api/openapi/internal/definitions"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen OUTPUT.json")
		os.Exit(2)
	}
	defs := definitions.GetOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef("#/components/schemas/" + openapi.ModelName(name))
	})
	out := make(map[string]definition, len(defs))
	for name, def := range defs {
		d := definition{Schema: def.Schema}
		for _, dep := range def.Dependencies {
			d.Dependencies = append(d.Dependencies, openapi.ModelName(dep))
		}
		out[openapi.ModelName(name)] = d
	}
	prune(out)
	for _, k := range api.Kinds() {
		model := openapi.TypeModelName(reflect.TypeOf(k.New()).Elem())
		d, ok := out[model]
		if !ok {
			fmt.Fprintf(os.Stderr, "no definition of %s (%s)\n", k.GVK.Kind, model)
			os.Exit(1)
		}
		d.Schema.AddExtension("x-kubernetes-group-version-kind",
			[]any{map[string]any{"group": k.GVK.Group, "version": k.GVK.Version, "kind": k.GVK.Kind}})
		out[model] = d
	}
	data, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[1], append(data, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// prune drops the definitions of Kubernetes' own API types
// (k8s.io/api/...) that none of berth's definitions refers to, directly or
// not: berth holds a few of them as field types, and openapi-gen makes
// them all. The kinds berth serves as Kubernetes' own types (the
// admission kinds) are kept with what they refer to.
func prune(defs map[string]definition) {
	const theirs = "io.k8s.api."
	keep := map[string]bool{}
	var walk func(string)
	walk = func(name string) {
		if keep[name] {
			return
		}
		keep[name] = true
		if d, ok := defs[name]; ok {
			for _, dep := range d.Dependencies {
				walk(dep)
			}
		}
	}
	for name := range defs {
		if !strings.HasPrefix(name, theirs) {
			walk(name)
		}
	}
	for _, k := range api.Kinds() {
		walk(openapi.TypeModelName(reflect.TypeOf(k.New()).Elem()))
	}
	for name := range defs {
		if !keep[name] {
			delete(defs, name)
		}
	}
}

// definition is what openapi.DefinitionsJSON holds for each definition.
type definition struct {
	Schema       spec.Schema `json:"schema"`
	Dependencies []string    `json:"dependencies,omitempty"`
}
