package store

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-memdb"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
)

// Filter selects objects of one kind. Every set field must match.
type Filter struct {
	// Namespace limits the result to one namespace.
	Namespace string
	// Index and Value select by one of the table's indexes (IndexNode,
	// IndexOwner, IndexSource, …) instead of scanning the table. The empty
	// Value is meaningful for IndexNode: the pods not bound yet.
	Index string
	Value string
	// Labels selects by labels.
	Labels labels.Selector
	// Predicate is any other test.
	Predicate func(api.Object) bool
}

// Translate turns a store event into what a watch filtered by f sees, as
// Kubernetes does for filtered watches: an object that stops matching is
// Deleted, one that starts matching is Added; ok is false for a change
// the filter does not see at all.
func (f *Filter) Translate(e Event) (_ Event, ok bool) {
	k := e.Kind
	switch e.Type {
	case Added:
		return e, f.Matches(k, e.Object)
	case Deleted:
		return e, f.Matches(k, e.Object)
	}
	was, is := f.Matches(k, e.Old), f.Matches(k, e.Object)
	switch {
	case was && is:
		return e, true
	case is:
		e.Type = Added
		return e, true
	case was:
		gone := e.Old.DeepCopyObject().(api.Object)
		gone.SetResourceVersion(e.Object.GetResourceVersion())
		return Event{Type: Deleted, Revision: e.Revision, Kind: k, Object: gone, Old: e.Old}, true
	}
	return e, false
}

// Matches reports whether an object passes the filter. The index test is
// answered by the table's own indexer, so it means the same for lists and
// watches.
func (f *Filter) Matches(k *api.Kind, obj api.Object) bool {
	if f.Namespace != "" && obj.GetNamespace() != f.Namespace {
		return false
	}
	if f.Index != "" && !indexHas(k, f.Index, obj, f.Value) {
		return false
	}
	if f.Labels != nil && !f.Labels.Empty() && !f.Labels.Matches(labels.Set(obj.GetLabels())) {
		return false
	}
	if f.Predicate != nil && !f.Predicate(obj) {
		return false
	}
	return true
}

// indexValues returns the values an object is indexed under.
func indexValues(k *api.Kind, index string, obj api.Object) []string {
	idx := indexSchema(k, index)
	if idx == nil {
		return nil
	}
	switch ix := idx.Indexer.(type) {
	case *singleIndexer:
		if v, ok := ix.fn(obj); ok {
			return []string{v}
		}
	case *multiIndexer:
		return ix.fn(obj)
	}
	return nil
}

func indexHas(k *api.Kind, index string, obj api.Object, value string) bool {
	for _, v := range indexValues(k, index, obj) {
		if v == value {
			return true
		}
	}
	return false
}

var schemas = schema()

func indexSchema(k *api.Kind, index string) *memdb.IndexSchema {
	t := schemas.Tables[tableName(k)]
	if t == nil {
		return nil
	}
	return t.Indexes[index]
}

// reader answers reads from a memdb transaction: a snapshot's, or a write
// transaction's, which sees its own writes.
type reader struct {
	txn *memdb.Txn
	rev uint64
}

// Revision is the revision the reader sees (for a transaction: the one it
// will commit as).
func (r *reader) Revision() uint64 { return r.rev }

// Get returns one object, or an error wrapping ErrNotFound.
func (r *reader) Get(k *api.Kind, namespace, name string) (api.Object, error) {
	raw, err := r.txn.First(tableName(k), IndexID, idKey(k, namespace, name))
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", k.Resource, err)
	}
	if raw == nil {
		return nil, objectError(ErrNotFound, k, namespace, name, "")
	}
	return raw.(api.Object), nil
}

// Each calls fn for every object of a kind that matches f, in key order,
// until fn returns false. It lets large lists stream without a slice.
func (r *reader) Each(k *api.Kind, f Filter, fn func(api.Object) bool) error {
	return r.EachFrom(k, f, "", fn)
}

// EachFrom is Each from the first object whose Key is from or after it:
// the next page of a list whose last object's key was just before from.
func (r *reader) EachFrom(k *api.Kind, f Filter, from string, fn func(api.Object) bool) error {
	var (
		it  memdb.ResultIterator
		err error
		// prefix, when set, ends the walk at the first key without it.
		prefix string
		// skip: the iterator may start before from.
		skip bool
	)
	table := tableName(k)
	// base is the part of every key of the kind that its table's other
	// kinds do not share: custom kinds share one table.
	base := idKey(k, "", "")
	switch {
	case f.Index != "":
		if indexSchema(k, f.Index) == nil {
			return fmt.Errorf("list %s: no index %q", k.Resource, f.Index)
		}
		// One index value's entries are in key order: the ones before
		// from are passed over.
		it, err = r.txn.Get(table, f.Index, f.Value)
		skip = from != ""
	case f.Namespace != "" && k.Namespaced:
		prefix = base + f.Namespace + "/"
		if from == "" || base+from < prefix {
			it, err = r.txn.Get(table, IndexID+"_prefix", prefix)
		} else {
			it, err = r.txn.LowerBound(table, IndexID, base+from)
		}
	case from != "":
		prefix = base
		it, err = r.txn.LowerBound(table, IndexID, base+from)
	case base != "":
		prefix = base
		it, err = r.txn.Get(table, IndexID+"_prefix", base)
	default:
		it, err = r.txn.Get(table, IndexID)
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", k.Resource, err)
	}
	// The index already answered the index test.
	rest := f
	rest.Index = ""
	for raw := it.Next(); raw != nil; raw = it.Next() {
		obj := raw.(api.Object)
		if prefix != "" || skip || base != "" {
			key := idOf(obj)
			if prefix != "" && !strings.HasPrefix(key, prefix) {
				return nil
			}
			if base != "" && !strings.HasPrefix(key, base) {
				continue // another custom kind's, found by an index
			}
			if skip && key < base+from {
				continue
			}
		}
		if !rest.Matches(k, obj) {
			continue
		}
		if !fn(obj) {
			return nil
		}
	}
	return nil
}

// Key is an object's place in the order Each and EachFrom list objects
// of its kind in: "namespace/name", or the name of a cluster-scoped
// object.
func Key(obj api.Object) string { return objectKey(obj.GetNamespace(), obj.GetName()) }

// List returns every object of a kind that matches f, in key order.
func (r *reader) List(k *api.Kind, f Filter) ([]api.Object, error) {
	var out []api.Object
	err := r.Each(k, f, func(o api.Object) bool {
		out = append(out, o)
		return true
	})
	return out, err
}

// Snapshot is a consistent, read-only view of the store at one revision.
type Snapshot struct {
	reader
}
