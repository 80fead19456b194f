package apply

import (
	"reflect"
	"slices"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
)

// sharedRevisions decodes revisions as a source does, through one
// Decoder: files it decoded before give back the very same objects.
type sharedRevisions struct {
	t   *testing.T
	dec source.Decoder
}

func (s *sharedRevisions) rev(id string, files ...string) source.Revision {
	s.t.Helper()
	var c source.Contents
	for i := 0; i < len(files); i += 2 {
		c.Files = append(c.Files, source.File{Name: files[i], Data: []byte(files[i+1])})
	}
	rev := s.dec.Revision(c, id)
	if len(rev.Errors) > 0 {
		s.t.Fatal(rev.Errors)
	}
	return rev
}

// snapshotDecoded deep-copies what a revision's decoded objects are, to
// check later that nothing changed them.
func snapshotDecoded(rev source.Revision) []api.Object {
	var out []api.Object
	for _, d := range rev.Objects {
		out = append(out, d.Object.DeepCopyObject().(api.Object))
	}
	return out
}

func TestSharedDecodedObjects(t *testing.T) {
	f := newFixture(t)
	revs := &sharedRevisions{t: t}
	files := []string{"web.yaml", deployment("web", 2), "a.yaml", configMap("a", "1"), "b.yaml", configMap("b", "1")}
	r1 := revs.rev("r1", files...)
	before := snapshotDecoded(r1)
	f.mustApply(r1)

	files[5] = configMap("b", "2")
	r2 := revs.rev("r2", files...)
	if r2.Objects[0] != r1.Objects[0] {
		t.Fatal("the decoder did not give back the same decoded object for an unchanged file")
	}

	// Prepare: the unchanged objects are Same without a copy, the changed
	// one is a defaulted, marked copy.
	desired, errs := Prepare(fleet, r2.Objects, r2.Errors, f.applier.state(fleet).applied)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var same []string
	for _, d := range desired {
		if d.Same {
			same = append(same, d.Key.String())
			if d.Object != nil {
				t.Errorf("%s: an unchanged object was copied", d.Key)
			}
			continue
		}
		if d.Object.GetAnnotations()[api.AnnotationSource] != fleet || d.Object.GetNamespace() != api.NamespaceDefault {
			t.Errorf("%s: not prepared: %v", d.Key, d.Object)
		}
	}
	slices.Sort(same)
	if want := []string{"ConfigMap/default/a", "Deployment/default/web"}; !slices.Equal(same, want) {
		t.Errorf("same %v, want %v", same, want)
	}

	n := f.backend.count()
	res := f.mustApply(r2)
	if res.Counts != (Counts{Updated: 1, Unchanged: 2}) {
		t.Errorf("counts %+v", res.Counts)
	}
	if got, want := f.backend.since(n), []string{"ConfigMap/default/b", "Source/fleet"}; !slices.Equal(got, want) {
		t.Errorf("wrote %v, want %v", got, want)
	}

	// A change made outside the source to an object the revision shares
	// with the last one is reverted at the next sync, and so is a delete.
	d := f.get("Deployment", "default", "web").DeepCopyObject().(*api.Deployment)
	five := int32(5)
	d.Spec.Replicas = &five
	if _, err := f.store.Update(f.ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Delete(f.ctx, api.KindOf(&api.ConfigMap{}), "default", "a", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	res = f.mustApply(revs.rev("r2", files...))
	if res.Counts != (Counts{Created: 1, Updated: 1, Unchanged: 1, Drifted: 1}) {
		t.Errorf("counts after drift %+v", res.Counts)
	}
	if got := *f.get("Deployment", "default", "web").(*api.Deployment).Spec.Replicas; got != 2 {
		t.Errorf("replicas %d after the sync", got)
	}
	if a := f.get("ConfigMap", "default", "a"); a.GetAnnotations()[api.AnnotationSource] != fleet {
		t.Errorf("recreated without its source: %v", a.GetAnnotations())
	}

	// Correct, between syncs, prepares from the shared decoded object.
	if _, err := f.store.Delete(f.ctx, api.KindOf(&api.Deployment{}), "default", "web", store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if corrected, err := f.applier.Correct(f.ctx, fleet, Key{Kind: api.KindOf(&api.Deployment{}), Namespace: "default", Name: "web"}); err != nil || !corrected {
		t.Fatalf("correct: %v %v", corrected, err)
	}
	if got := *f.get("Deployment", "default", "web").(*api.Deployment).Spec.Replicas; got != 2 {
		t.Errorf("replicas %d after the correction", got)
	}

	// Through all of it, the decoded objects stayed as decoded.
	for i, d := range r1.Objects {
		if !reflect.DeepEqual(d.Object, before[i]) {
			t.Errorf("decoded %s changed: %v", d.Object.GetName(), d.Object)
		}
	}
}
