package build

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/berth-dev/berth/api"
)

// File is one file of a tree, or one manifest stream a build produced,
// named by its slash path relative to the tree's root.
type File struct {
	Name string
	Data []byte
}

// Tree is what a build reads: every file of a repository (or of a
// directory source) and the folder to build.
type Tree struct {
	// Files are every regular file of the tree, whatever its name.
	Files []File
	// Dir is the slash path of the folder to build, relative to the
	// tree's root; "" or "." is the root.
	Dir string
}

// Options say how a tree is built. The zero value builds kustomizations
// and charts (with the chart's own values) and refuses encrypted files.
type Options struct {
	// AgeKey holds the age identities (AGE-SECRET-KEY-1… lines; comments
	// and blank lines allowed) that open files encrypted with SOPS. It is
	// never written anywhere; nil leaves an encrypted file an error that
	// names it.
	AgeKey []byte
	// Helm says how a chart is rendered.
	Helm Helm
}

// Kind is what a folder asks for.
type Kind string

// Kinds of build.
const (
	// Plain is a folder of manifests: nothing to build.
	Plain Kind = ""
	// Kustomize is a folder holding a kustomization file.
	Kustomize Kind = "kustomize"
	// Chart is a folder holding a Helm chart (Chart.yaml).
	Chart Kind = "helm"
)

// KustomizationNames are the names kustomize reads a kustomization from,
// in the order it looks for them.
var KustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// ChartFile names the file that makes a folder a Helm chart.
const ChartFile = "Chart.yaml"

// KindOf says what the folder dir asks for, from whether it holds a file
// of a name (has is called with base names only).
func KindOf(has func(name string) bool) Kind {
	if slices.ContainsFunc(KustomizationNames, has) {
		return Kustomize
	}
	if has(ChartFile) {
		return Chart
	}
	return Plain
}

// Build builds the tree's folder into manifest streams, for berth's
// decoder: kustomize's output as one stream named after the
// kustomization file, a chart's as one stream per template (its CRDs
// first). Files encrypted with SOPS are opened first, in memory. The
// errors name the file (and field, where known) and mean nothing may be
// applied.
func Build(t Tree, opts Options) ([]File, api.ErrorList) {
	dir := cleanDir(t.Dir)
	files, errs := decryptAll(t.Files, opts.AgeKey)
	if len(errs) > 0 {
		return nil, errs
	}
	names := make(map[string]bool, len(files))
	for _, f := range files {
		names[f.Name] = true
	}
	switch KindOf(func(n string) bool { return names[join(dir, n)] }) {
	case Kustomize:
		return kustomize(files, dir)
	case Chart:
		return renderChart(files, dir, opts.Helm)
	}
	return nil, api.ErrorList{{File: join(dir, "."), Doc: -1, Message: "holds neither a kustomization nor a Helm chart: nothing to build"}}
}

// cleanDir makes dir a clean slash path, "." for the root.
func cleanDir(dir string) string {
	dir = path.Clean("/" + dir)
	if dir == "/" {
		return "."
	}
	return strings.TrimPrefix(dir, "/")
}

// join is path.Join that keeps names relative to the root ("." alone for
// the root itself).
func join(dir, name string) string { return path.Join(dir, name) }

// fileError is the error of a whole file.
func fileError(name string, format string, args ...any) *api.Error {
	return &api.Error{File: name, Doc: -1, Message: fmt.Sprintf(format, args...)}
}
