package crd_test

import (
	"context"
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/crd"
)

// gadgets is a CRD of one version: apiextensions' conversion moves the
// schema of a CRD whose versions all share it to the top of the spec,
// where it must still be found.
const gadgets = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
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
            x-kubernetes-validations:
            - rule: "self.replicas <= 10"
              message: "at most 10 replicas"
            properties:
              size: {type: string, enum: [small, large]}
              replicas: {type: integer, minimum: 0, default: 1}
              ports:
                type: array
                x-kubernetes-list-type: set
                items: {type: integer}
`

func gadgetVersion(t *testing.T) *crd.Version {
	t.Helper()
	objs, errs := api.DecodeStream("crd.yaml", []byte(gadgets), api.DecodeOptions{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c := objs[0].Object.(*api.CustomResourceDefinition)
	api.Default(c)
	versions, err := crd.Versions(c)
	if err != nil {
		t.Fatal(err)
	}
	if versions["v1"] == nil {
		t.Fatalf("versions: %v", versions)
	}
	return versions["v1"]
}

func TestPruneAndDefault(t *testing.T) {
	v := gadgetVersion(t)
	obj := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g"},
		"spec":     map[string]any{"size": "small", "colour": "red"},
		"extra":    true,
	}
	unknown := v.PruneAndDefault(obj)
	if strings.Join(unknown, " ") != "extra spec.colour" {
		t.Errorf("unknown fields %q", unknown)
	}
	spec := obj["spec"].(map[string]any)
	if _, ok := spec["colour"]; ok {
		t.Errorf("spec.colour not pruned: %v", spec)
	}
	if spec["replicas"] != int64(1) {
		t.Errorf("replicas not defaulted: %#v", spec["replicas"])
	}
}

func TestValidate(t *testing.T) {
	v := gadgetVersion(t)
	for _, c := range []struct {
		name string
		spec map[string]any
		want []string
	}{
		{"valid", map[string]any{"size": "large", "replicas": int64(3)}, nil},
		{"enum", map[string]any{"size": "medium", "replicas": int64(1)}, []string{`spec.size: Unsupported value: "medium"`}},
		{"required and minimum", map[string]any{"replicas": int64(-1)}, []string{"spec.replicas: Invalid value: -1", "spec.size: Required value"}},
		{"cel", map[string]any{"size": "small", "replicas": int64(11)}, []string{"spec: Invalid value: at most 10 replicas"}},
		{"list set", map[string]any{"size": "small", "replicas": int64(1), "ports": []any{int64(80), int64(80)}}, []string{"spec.ports[1]: Duplicate value: 80"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"}, "spec": c.spec}
			errs := v.Validate(context.Background(), obj, nil)
			if len(errs) != len(c.want) {
				t.Fatalf("errors %v, want %d", errs, len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d: %q, want %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}
