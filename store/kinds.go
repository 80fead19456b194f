package store

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
)

// A store serves the custom kinds of the CRDs it holds. A real store
// registers them for the whole process (api's registry), which the API
// server, the controllers and the CLI read. A fork keeps its own: the
// kinds of the CRDs it created, changed or deleted, over the process's,
// so that a plan of a revision holding a CRD serves the CRD's kind to
// the revision's objects in the fork, and nowhere else: the kind is not
// known to the process after the plan, and a plan of a changed CRD
// leaves the kind the live store's objects are checked with as it was.

// forkKinds are a fork's own custom kinds, by resource: the kind of a CRD
// the fork wrote, or nil for one it deleted (or whose names it refused).
// A resource it holds no entry for has the process's kind.
type forkKinds struct {
	mu   sync.RWMutex
	byGR map[k8sschema.GroupResource]*api.Kind
}

// copyKinds is a new fork's own kinds: its parent's, when the parent is
// a fork too.
func (f *forkKinds) copyKinds() *forkKinds {
	out := &forkKinds{byGR: map[k8sschema.GroupResource]*api.Kind{}}
	if f != nil {
		f.mu.RLock()
		maps.Copy(out.byGR, f.byGR)
		f.mu.RUnlock()
	}
	return out
}

// set makes the kind of crd the fork's: nil removes it. A CRD the process
// serves with the same spec keeps the process's kind (and the schemas
// built for it).
func (f *forkKinds) set(gr k8sschema.GroupResource, crd *api.CustomResourceDefinition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if crd == nil {
		f.byGR[gr] = nil
		return
	}
	if k, ok := api.CustomKind(gr); ok && k.CRD.Name == crd.Name && equality.Semantic.DeepEqual(k.CRD.Spec, crd.Spec) {
		delete(f.byGR, gr)
		return
	}
	if old := f.byGR[gr]; old != nil && equality.Semantic.DeepEqual(old.CRD.Spec, crd.Spec) {
		return
	}
	f.byGR[gr] = api.CustomKindOf(crd)
}

// lookup returns the fork's entry for gr: held says whether it has one.
func (f *forkKinds) lookup(gr k8sschema.GroupResource) (k *api.Kind, held bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	k, held = f.byGR[gr]
	return k, held
}

// forGVK returns the fork's kind served at gvk; held says whether the
// fork decides it (it has a kind of that group and kind, or has
// replaced or removed the process's).
func (f *forkKinds) forGVK(gvk k8sschema.GroupVersionKind) (k *api.Kind, held bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, k := range f.byGR {
		if k != nil && k.GVK.Group == gvk.Group && k.GVK.Kind == gvk.Kind {
			if slices.Contains(k.Versions, gvk.Version) {
				return k, true
			}
			return nil, true
		}
	}
	return nil, false
}

// CustomKind returns the kind this store serves for a custom resource:
// the process's registered kind, or, in a fork, the kind of the CRD the
// fork holds.
func (s *Store) CustomKind(gr k8sschema.GroupResource) (*api.Kind, bool) {
	if s.kinds != nil {
		if k, held := s.kinds.lookup(gr); held {
			return k, k != nil
		}
	}
	return api.CustomKind(gr)
}

// CurrentKind is k.Current() as this store sees it: k itself for a
// built-in kind, the kind this store serves now for a custom one (nil
// once its CRD is gone).
func (s *Store) CurrentKind(k *api.Kind) *api.Kind {
	if !k.Custom {
		return k
	}
	cur, _ := s.CustomKind(k.GroupResource())
	return cur
}

// customKindFor returns the kind this store serves at gvk.
func (s *Store) customKindFor(gvk k8sschema.GroupVersionKind) *api.Kind {
	if s.kinds != nil {
		if k, held := s.kinds.forGVK(gvk); held {
			return k
		}
	}
	k, ok := api.KindFor(gvk)
	if !ok || !k.Custom {
		return nil
	}
	if s.kinds != nil {
		if _, held := s.kinds.lookup(k.GroupResource()); held {
			return nil // the fork replaced it, under another kind name, or removed it
		}
	}
	return k
}

// syncKinds registers, or forgets, the kinds of the CRDs ops write: in
// the process's registry, or a fork's own.
func (s *Store) syncKinds(ops []Op) {
	if s.kinds == nil {
		syncCustomKinds(ops)
		return
	}
	for _, op := range ops {
		if op.Kind != crdKind {
			continue
		}
		// The name of a CRD is its plural and group.
		plural, group, _ := strings.Cut(op.Name, ".")
		gr := k8sschema.GroupResource{Group: group, Resource: plural}
		crd, _ := op.Object.(*api.CustomResourceDefinition)
		if crd != nil && (!namesAccepted(crd) || api.StorageVersion(crd) == "") {
			crd = nil
		}
		s.kinds.set(gr, crd)
	}
}
