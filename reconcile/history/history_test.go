package history

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

func template(image string) *api.PodTemplateSpec {
	return &api.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "db", Image: image}}}}
}

// TestPatchIsWhatKubectlApplies: the data is a strategic merge patch of
// spec.template that replaces it, and the template reads back out of it.
func TestPatchIsWhatKubectlApplies(t *testing.T) {
	data, err := Patch(template("v1"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]map[string]map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m["spec"]["template"]["$patch"] != "replace" {
		t.Fatalf("data %s", data)
	}
	got, err := (&api.ControllerRevision{Data: runtime.RawExtension{Raw: data}}).Template()
	if err != nil || got.Spec.Containers[0].Image != "v1" || got.Labels["app"] != "db" {
		t.Fatalf("template %+v %v", got, err)
	}
	if Hash(data, nil) == Hash(data, new(int32)) {
		t.Error("the collision count does not change the hash")
	}
}

// TestEnsureCollision: a name taken by other data raises the collision
// count and the revision gets another name.
func TestEnsureCollision(t *testing.T) {
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	owner, err := s.Create(ctx, &api.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}})
	if err != nil {
		t.Fatal(err)
	}
	gvk := api.KindOf(owner).GVK
	data, _ := Patch(template("v1"))
	squatter := &api.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db-" + Hash(data, nil)},
		Data: runtime.RawExtension{Raw: []byte(`{"other":1}`)}, Revision: 1}
	if _, err := s.Create(ctx, squatter); err != nil {
		t.Fatal(err)
	}
	var collisions int32
	r, err := Ensure(ctx, s, owner, gvk, nil, data, nil, &collisions)
	if err != nil {
		t.Fatal(err)
	}
	if collisions != 1 || r.Name != "db-"+Hash(data, &collisions) || r.Labels[api.LabelControllerRevisionHashKey] != Hash(data, &collisions) {
		t.Fatalf("collisions %d, revision %s %v", collisions, r.Name, r.Labels)
	}
	revs, _ := Owned(s, owner)
	if again, err := Ensure(ctx, s, owner, gvk, nil, data, revs, &collisions); err != nil || again.Name != r.Name || collisions != 1 {
		t.Fatalf("ensure again: %v %v, collisions %d", again, err, collisions)
	}
	// Trim keeps the live one and limit others.
	data2, _ := Patch(template("v2"))
	r2, _ := Ensure(ctx, s, owner, gvk, nil, data2, revs, &collisions)
	revs, _ = Owned(s, owner)
	if len(revs) != 2 || revs[1].Name != r2.Name || r2.Revision != 2 {
		t.Fatalf("revisions %v", revs)
	}
	if err := Trim(ctx, s, revs, map[string]bool{r2.Name: true}, 0); err != nil {
		t.Fatal(err)
	}
	if revs, _ = Owned(s, owner); len(revs) != 1 || revs[0].Name != r2.Name {
		t.Fatalf("after trim %v", revs)
	}
}

// TestEnsureAnnotations: a new revision takes the owner's change-cause
// and other annotations, not its own (last applied configuration, source
// and prune marks); one gone back to keeps those it was made with.
func TestEnsureAnnotations(t *testing.T) {
	s, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	owner, err := s.Create(ctx, &api.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", Annotations: map[string]string{
		"kubernetes.io/change-cause":    "v1",
		"team":                          "storage",
		api.AnnotationLastAppliedConfig: "{}",
		api.AnnotationSource:            "site",
		api.AnnotationPrune:             "true",
	}}})
	if err != nil {
		t.Fatal(err)
	}
	gvk := api.KindOf(owner).GVK
	var collisions int32
	data1, _ := Patch(template("v1"))
	r1, err := Ensure(ctx, s, owner, gvk, nil, data1, nil, &collisions)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"kubernetes.io/change-cause": "v1", "team": "storage"}; !maps.Equal(r1.Annotations, want) {
		t.Fatalf("annotations %v, want %v", r1.Annotations, want)
	}
	owner.SetAnnotations(map[string]string{"kubernetes.io/change-cause": "v2"})
	revs, _ := Owned(s, owner)
	data2, _ := Patch(template("v2"))
	r2, err := Ensure(ctx, s, owner, gvk, nil, data2, revs, &collisions)
	if err != nil || r2.Annotations["kubernetes.io/change-cause"] != "v2" {
		t.Fatalf("second revision %v %v", r2, err)
	}
	owner.SetAnnotations(nil)
	revs, _ = Owned(s, owner)
	back, err := Ensure(ctx, s, owner, gvk, nil, data1, revs, &collisions)
	if err != nil || back.Name != r1.Name || back.Revision != 3 || back.Annotations["kubernetes.io/change-cause"] != "v1" {
		t.Fatalf("back to the first: %v %v", back, err)
	}
	if Annotations(map[string]string{api.AnnotationSource: "site"}) != nil {
		t.Error("no annotation to copy gives a map")
	}
}
