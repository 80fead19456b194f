package store

import (
	"fmt"
	"slices"

	"github.com/hashicorp/go-memdb"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berth-dev/berth/api"
)

// Index names. Every table has IndexID, IndexOwner and IndexSource; the
// others exist on the tables where a controller needs them. There is no
// index by UID: references carry names, and a UID is checked after a get.
const (
	// IndexID is the primary key: "namespace/name", or "name" for
	// cluster-scoped kinds.
	IndexID = "id"
	// IndexOwner finds the dependents of an owner by its UID.
	IndexOwner = "owner"
	// IndexSource finds the objects a source applied (berth.dev/source).
	IndexSource = "source"
	// IndexNode finds the pods bound to a node; unbound pods are indexed
	// under the empty node name so the scheduler finds them directly.
	IndexNode = "node"
	// IndexVolume finds the claim bound to a PersistentVolume by name.
	IndexVolume = "volume"
	// IndexClaim finds the PersistentVolume whose claimRef names a claim
	// ("namespace/name").
	IndexClaim = "claim"
	// IndexOrphan finds the pods (or ReplicaSets) of a namespace (the
	// value) that have no controller, which a ReplicaSet (or Deployment)
	// may adopt, without scanning every pod (or ReplicaSet) of the
	// namespace on each sync. Controlled objects are not in it.
	IndexOrphan = "orphan"
	// IndexService finds the EndpointSlices of a service ("namespace/name",
	// by their kubernetes.io/service-name label) without scanning the
	// slices of its namespace.
	IndexService = "service"
	// IndexClusterIP finds the Service holding a virtual IP, so that the
	// allocator checks an address in the transaction that hands it out.
	IndexClusterIP = "clusterIP"
	// IndexNodePort finds the Service holding a node port ("30080").
	IndexNodePort = "nodePort"
)

// tableIndexes lists, per kind, the indexes beyond id, uid, owner and source.
var tableIndexes = map[string]map[string]*memdb.IndexSchema{
	"ReplicaSet": {
		IndexOrphan: orphanIndex(),
	},
	"Pod": {
		IndexNode: {Name: IndexNode, Indexer: singleIndex(func(o api.Object) (string, bool) {
			return o.(*api.Pod).Spec.NodeName, true
		})},
		IndexOrphan: orphanIndex(),
	},
	"Service": {
		IndexClusterIP: {Name: IndexClusterIP, AllowMissing: true, Indexer: multiIndex(func(o api.Object) []string {
			return api.ServiceClusterIPs(o.(*api.Service))
		})},
		IndexNodePort: {Name: IndexNodePort, AllowMissing: true, Indexer: multiIndex(func(o api.Object) []string {
			return api.ServiceNodePorts(o.(*api.Service))
		})},
	},
	"EndpointSlice": {
		IndexService: {Name: IndexService, AllowMissing: true, Indexer: singleIndex(func(o api.Object) (string, bool) {
			svc, ok := o.GetLabels()[api.LabelServiceName]
			return objectKey(o.GetNamespace(), svc), ok
		})},
	},
	"PersistentVolumeClaim": {
		IndexVolume: {Name: IndexVolume, AllowMissing: true, Indexer: singleIndex(func(o api.Object) (string, bool) {
			v := o.(*api.PersistentVolumeClaim).Spec.VolumeName
			return v, v != ""
		})},
	},
	"PersistentVolume": {
		IndexClaim: {Name: IndexClaim, AllowMissing: true, Indexer: singleIndex(func(o api.Object) (string, bool) {
			ref := o.(*api.PersistentVolume).Spec.ClaimRef
			if ref == nil || ref.Name == "" {
				return "", false
			}
			return ref.Namespace + "/" + ref.Name, true
		})},
	},
}

// tableName is the memdb table of a kind: every custom kind's objects are
// in one table, customTable, their keys led by their group and kind.
func tableName(k *api.Kind) string {
	if k.Custom {
		return customTable
	}
	return k.GVK.Kind
}

// customTable holds the objects of every custom kind. memdb's tables are
// fixed when it is made, and CRDs come and go.
const customTable = "custom/objects"

// idKey is the primary key of an object of kind k in its table.
func idKey(k *api.Kind, namespace, name string) string {
	if k.Custom {
		return customPrefix(k.GVK.Group, k.GVK.Kind) + objectKey(namespace, name)
	}
	return objectKey(namespace, name)
}

// customPrefix leads the keys of a custom kind's objects.
func customPrefix(group, kind string) string { return group + "/" + kind + "/" }

// idOf is an object's primary key.
func idOf(o api.Object) string {
	if u, ok := o.(*unstructured.Unstructured); ok {
		gvk := u.GroupVersionKind()
		return customPrefix(gvk.Group, gvk.Kind) + objectKey(o.GetNamespace(), o.GetName())
	}
	return objectKey(o.GetNamespace(), o.GetName())
}

// orphanIndex indexes an object without a controller under its
// namespace.
func orphanIndex() *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: IndexOrphan, AllowMissing: true, Indexer: singleIndex(func(o api.Object) (string, bool) {
		return o.GetNamespace(), api.ControllerOf(o) == nil
	})}
}

// objectKey is the primary key of an object in its table.
func objectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func schema() *memdb.DBSchema {
	s := &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{}}
	custom := &api.Kind{Custom: true}
	for _, k := range append(slices.Clip(api.Kinds()), custom) {
		t := &memdb.TableSchema{
			Name: tableName(k),
			Indexes: map[string]*memdb.IndexSchema{
				IndexID: {Name: IndexID, Unique: true, Indexer: singleIndex(func(o api.Object) (string, bool) {
					return idOf(o), true
				})},
				IndexOwner: {Name: IndexOwner, AllowMissing: true, Indexer: multiIndex(func(o api.Object) []string { return api.OwnerUIDs(o) })},
				IndexSource: {Name: IndexSource, AllowMissing: true, Indexer: singleIndex(func(o api.Object) (string, bool) {
					s, ok := o.GetAnnotations()[api.AnnotationSource]
					return s, ok
				})},
			},
		}
		for name, idx := range tableIndexes[k.GVK.Kind] {
			t.Indexes[name] = idx
		}
		s.Tables[t.Name] = t
	}
	return s
}

// stringIndex turns a string argument into an index key. Keys end in NUL
// so that "ns/a" is not a prefix match of "ns/ab" for exact lookups.
type stringIndex struct{}

func (stringIndex) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("index takes one argument, got %d", len(args))
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("index argument must be a string, got %T", args[0])
	}
	return append([]byte(s), 0), nil
}

func (stringIndex) PrefixFromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("index takes one argument, got %d", len(args))
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("index argument must be a string, got %T", args[0])
	}
	return []byte(s), nil
}

// singleIndexer indexes an object under at most one string.
type singleIndexer struct {
	stringIndex
	fn func(api.Object) (string, bool)
}

func singleIndex(fn func(api.Object) (string, bool)) *singleIndexer {
	return &singleIndexer{fn: fn}
}

func (i *singleIndexer) FromObject(raw any) (bool, []byte, error) {
	v, ok := i.fn(raw.(api.Object))
	if !ok {
		return false, nil, nil
	}
	return true, append([]byte(v), 0), nil
}

// multiIndexer indexes an object under several strings.
type multiIndexer struct {
	stringIndex
	fn func(api.Object) []string
}

func multiIndex(fn func(api.Object) []string) *multiIndexer {
	return &multiIndexer{fn: fn}
}

func (i *multiIndexer) FromObject(raw any) (bool, [][]byte, error) {
	vs := i.fn(raw.(api.Object))
	if len(vs) == 0 {
		return false, nil, nil
	}
	keys := make([][]byte, len(vs))
	for j, v := range vs {
		keys[j] = append([]byte(v), 0)
	}
	return true, keys, nil
}
