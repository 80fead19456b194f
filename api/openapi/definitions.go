// Package openapi holds the OpenAPI schemas of berth's kinds and of the
// apimachinery types they use, generated from the Go types with their
// comments as descriptions (see api/generate.go): as Go in
// internal/definitions, which only the generator (gen) links, and as the
// JSON the API server embeds. The Go, and the kube-openapi packages it
// needs, would add megabytes to every binary for a few hundred kilobytes
// of text.
package openapi

import (
	_ "embed"
	"reflect"
	"slices"
	"strings"
)

// DefinitionsJSON maps the model name of every definition to an object
// with its schema ("schema") and the model names of the definitions it
// refers to ("dependencies"). The schema of each of berth's kinds carries
// its x-kubernetes-group-version-kind, by which kubectl explain and the
// field manager find it.
//
//go:embed definitions.json
var DefinitionsJSON []byte

// ModelName names a Go type's definition in the documents: its package
// path with the domain reversed, as Kubernetes names its own
// ("github.com/berth-dev/berth/api.Pod" is
// "com.github.berth-dev.berth.api.Pod"); the apimachinery types come named
// so ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta").
func ModelName(name string) string {
	domain, rest, ok := strings.Cut(name, "/")
	if !ok {
		return name
	}
	labels := strings.Split(domain, ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".") + "." + strings.ReplaceAll(rest, "/", ".")
}

// TypeModelName is ModelName of a Go type.
func TypeModelName(t reflect.Type) string { return ModelName(t.PkgPath() + "." + t.Name()) }
