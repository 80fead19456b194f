package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
)

// crateCRD defines kind Crate (crates) in group cli-tree.example.com: a
// spec of a required size of at least 1.
const crateCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crates.cli-tree.example.com}
spec:
  group: cli-tree.example.com
  names: {kind: Crate, plural: crates, singular: crate}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1}
              label: {type: string, default: plain}
`

func crate(name, spec string) string {
	return fmt.Sprintf("apiVersion: cli-tree.example.com/v1\nkind: Crate\nmetadata: {name: %s}\nspec: %s\n", name, spec)
}

// plan, diff and apply -f of a tree holding a CRD and objects of its kind
// work before the CRD is applied: the objects are checked against the
// tree's CRD, planned as the server would apply them (the CRD first) and
// diffed against nothing; neither the plan nor the diff makes the kind
// known to the process.
func TestPlanAndDiffOfATreeWithACRD(t *testing.T) {
	berth := berthAgainstServer(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "crd.yaml"), crateCRD)
	objs := filepath.Join(dir, "crates.yaml")
	writeFile(t, objs, crate("one", "{size: 2}"))
	gr := schema.GroupResource{Group: "cli-tree.example.com", Resource: "crates"}

	r := berth("plan", "-f", dir)
	if r.code != exitOK {
		t.Fatalf("plan: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"Objects: 2 to create, 0 to update, 0 to prune\n",
		"  create  CustomResourceDefinition/crates.cli-tree.example.com\n", "  create  Crate/default/one\n", "Result: fits\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("plan: no %q in\n%s", want, r.stdout)
		}
	}

	r = berth("diff", "-f", dir)
	if r.code != exitFailure || !strings.Contains(r.stdout, "--- live/crate.cli-tree.example.com/default/one\n+++ merged/crate.cli-tree.example.com/default/one\n") ||
		!strings.Contains(r.stdout, "+  size: 2\n") || !strings.Contains(r.stdout, "+  label: plain\n") ||
		!strings.Contains(r.stdout, "+++ merged/customresourcedefinition.apiextensions.k8s.io/crates.cli-tree.example.com\n") {
		t.Fatalf("diff: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if k, ok := api.CustomKind(gr); ok {
		t.Fatalf("plan and diff registered the kind %v of a CRD that is not applied", k)
	}

	// An object its CRD refuses: named, and nothing sent.
	writeFile(t, objs, crate("one", "{size: 0}"))
	for _, cmd := range []string{"plan", "diff"} {
		r = berth(cmd, "-f", dir)
		if r.code != exitUsage || !strings.Contains(r.stderr, "crates.yaml") || !strings.Contains(r.stderr, "spec.size") ||
			!strings.Contains(r.stderr, "nothing was sent to the server") {
			t.Fatalf("%s of an invalid custom resource: exit %d\nstderr: %s", cmd, r.code, r.stderr)
		}
	}

	// A custom resource whose CRD neither the tree nor the server has.
	stray := filepath.Join(t.TempDir(), "stray.yaml")
	writeFile(t, stray, strings.Replace(crate("two", "{size: 1}"), "Crate", "Barrel", 1))
	r = berth("plan", "-f", stray)
	if r.code != exitUsage || !strings.Contains(r.stderr, "no CustomResourceDefinition serves kind Barrel in cli-tree.example.com/v1: neither the manifests nor the server has one") {
		t.Fatalf("plan of a kind nothing defines: exit %d\nstderr: %s", r.code, r.stderr)
	}

	// Applied, the tree has nothing more to change, and its objects,
	// checked against the CRD the server now serves, still plan.
	writeFile(t, objs, crate("one", "{size: 2}"))
	if r = berth("apply", "-f", dir); r.code != exitOK ||
		r.stdout != "customresourcedefinition.apiextensions.k8s.io/crates.cli-tree.example.com created\ncrate.cli-tree.example.com/one created\n" {
		t.Fatalf("apply: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r = berth("diff", "-f", dir); r.code != exitOK || r.stdout != "" {
		t.Fatalf("diff after apply: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	writeFile(t, objs, crate("one", "{size: 3}"))
	if r = berth("diff", "-f", objs); r.code != exitFailure || !strings.Contains(r.stdout, "-  size: 2\n+  size: 3\n") {
		t.Fatalf("diff of a change, the CRD on the server: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r = berth("plan", "-f", objs); r.code != exitOK || !strings.Contains(r.stdout, "  update  Crate/default/one: spec.size\n") {
		t.Fatalf("plan of a change, the CRD on the server: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}
