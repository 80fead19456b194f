package controlplane

import (
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
)

// FuzzSourceSpec decodes arbitrary Source documents and runs them through
// validation and the dependsOn cycle check: nothing panics, every error
// names a field of the spec, and a cycle found starts and ends at the
// Source.
func FuzzSourceSpec(f *testing.F) {
	f.Add("apiVersion: berth.dev/v1\nkind: Source\nmetadata: {name: a}\nspec: {type: git, url: 'https://x/r.git', dependsOn: [b, a], wait: true, rollbackOnFailure: true, timeout: 1m}\n")
	f.Add("apiVersion: berth.dev/v1\nkind: Source\nmetadata: {name: a}\nspec: {type: dir, url: /srv, secretRef: {name: ''}, decryption: {provider: kms, secretRef: {name: k}}}\n")
	f.Add("apiVersion: berth.dev/v1\nkind: Source\nmetadata: {name: a}\nspec: {type: http, url: 'https://x/a.yaml', timeout: -1s, dependsOn: [b, b]}\n")
	f.Fuzz(func(t *testing.T, doc string) {
		objs, errs := api.DecodeStream("source.yaml", []byte(doc), api.DecodeOptions{})
		if len(errs) > 0 {
			for _, e := range errs {
				if e.File != "source.yaml" {
					t.Fatalf("error without its file: %v", e)
				}
			}
			return
		}
		for _, d := range objs {
			src, ok := d.Object.(*api.Source)
			if !ok {
				continue
			}
			for _, e := range api.Validate(src) {
				if !strings.HasPrefix(e.Field, "spec") && !strings.HasPrefix(e.Field, "metadata") {
					t.Fatalf("error names no field of the Source: %v", e)
				}
			}
			graph := map[string][]string{src.Name: src.Spec.DependsOn}
			for _, dep := range src.Spec.DependsOn {
				graph[dep] = append(graph[dep], src.Name)
			}
			if c := findCycle(src.Name, func(n string) []string { return graph[n] }); c != "" {
				if !strings.HasPrefix(c, src.Name+" -> ") || !strings.HasSuffix(c, " -> "+src.Name) {
					t.Fatalf("cycle %q does not go from %s back to it", c, src.Name)
				}
			}
		}
	})
}
