package plan

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
)

// crdOf defines kind Plank (planks) in group, with a spec of a required
// size; extra is more of the spec's properties.
func crdOf(group, extra string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: planks.%[1]s}
spec:
  group: %[1]s
  names: {kind: Plank, plural: planks}
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
              size: {type: integer, minimum: 1}%[2]s
`, group, extra)
}

func plank(group, name, spec string) string {
	return fmt.Sprintf("apiVersion: %s/v1\nkind: Plank\nmetadata: {name: %s, namespace: default}\nspec: %s\n", group, name, spec)
}

// A revision holding a CRD and objects of its kind is planned as the
// applier applies it (the CRD first, then its objects), on the fork
// alone: the kind is not known to the process after the plan, and a plan
// of a changed CRD leaves the kind the live objects are served and
// checked with as it was.
func TestPlanCustomResourceDefinition(t *testing.T) {
	t.Run("new", func(t *testing.T) {
		const group = "plan-new.example.com"
		s := cluster(t, 1)
		rep := run(t, s, "", crdOf(group, ""), plank(group, "one", "{size: 2}"))
		if !rep.Fits || len(rep.Failures()) > 0 {
			t.Fatalf("plan fails: errors %v, refusals %+v", rep.Errors, rep.Refusals)
		}
		var changes []string
		for _, c := range rep.Changes {
			changes = append(changes, c.Action+" "+c.Object)
		}
		want := "create CustomResourceDefinition/planks." + group + ", create Plank/default/one"
		if got := strings.Join(changes, ", "); got != want {
			t.Fatalf("changes %q, want %q", got, want)
		}
		if k, ok := api.CustomKind(schema.GroupResource{Group: group, Resource: "planks"}); ok {
			t.Fatalf("the plan registered the kind %v of its CRD for the whole process", k)
		}
	})
	t.Run("invalid object", func(t *testing.T) {
		const group = "plan-invalid.example.com"
		rep := run(t, cluster(t, 1), "", crdOf(group, ""), plank(group, "one", "{size: 0}"))
		if rep.Fits || len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0], "spec.size") {
			t.Fatalf("fits %v, errors %v: want one naming spec.size", rep.Fits, rep.Errors)
		}
	})
	t.Run("changed", func(t *testing.T) {
		const group = "plan-changed.example.com"
		s := cluster(t, 1)
		settle(t, s, crdOf(group, ""))
		gr := schema.GroupResource{Group: group, Resource: "planks"}
		before, ok := api.CustomKind(gr)
		if !ok {
			t.Fatal("the live CRD's kind is not registered")
		}
		settle(t, s, plank(group, "live", "{size: 1}"))
		rep := run(t, s, "", crdOf(group, "\n              color: {type: string}"), plank(group, "one", "{size: 2, color: red}"))
		if !rep.Fits || len(rep.Failures()) > 0 {
			t.Fatalf("plan fails: errors %v, refusals %+v", rep.Errors, rep.Refusals)
		}
		if len(rep.Changes) != 2 || rep.Changes[0].Action != "update" || rep.Changes[1].Action != "create" {
			t.Fatalf("changes %+v, want the CRD updated and the object created", rep.Changes)
		}
		if k, _ := api.CustomKind(gr); k != before {
			t.Fatalf("the plan of a changed CRD replaced the process's kind: %v", k)
		}
		select {
		case <-before.Replaced():
			t.Fatal("the plan of a changed CRD ended the watches of the live kind")
		default:
		}
		if _, err := s.Get(before, "default", "live"); err != nil {
			t.Fatal(err)
		}
	})
}
