package etcd

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// The keys under the prefix (default /berth):
//
//	<prefix>/format                      the layout version
//	<prefix>/checkpoint                  the revision the objects stand at
//	<prefix>/objects/<resource>/<key>    an object as of the checkpoint
//	<prefix>/log/<revision>/<part>       a commit after the checkpoint
//	<prefix>/leader/…                    the election
//	<prefix>/bootstrap                   the cluster's shared credentials
//
// A commit is one or more parts, each small enough for an etcd request;
// it counts only once its last part is written. Revisions are zero-padded
// so that etcd's key order is revision order.
const (
	formatKey     = "/format"
	checkpointKey = "/checkpoint"
	objectsDir    = "/objects/"
	logDir        = "/log/"
	leaderDir     = "/leader"
	// BootstrapKey holds what every control plane of the cluster shares
	// (its CA, tokens and signing key), under the prefix.
	BootstrapKey = "/bootstrap"
)

// format is the layout version written under formatKey.
const format = "1"

// maxPartBytes bounds a log part's value, well under etcd's default
// request limit of 1.5 MiB.
const maxPartBytes = 1 << 20

// MaxObjectBytes is the largest encoded object the backend holds: one
// object fits in one part with room to spare, as Kubernetes limits a
// ConfigMap or Secret to 1 MiB.
const MaxObjectBytes = maxPartBytes - 4<<10

// part is one log part as stored.
type part struct {
	Revision uint64  `json:"revision"`
	Last     bool    `json:"last,omitempty"`
	Ops      []logOp `json:"ops"`
}

// logOp is one write of a commit: an object's new encoding, or its
// deletion (Object empty).
type logOp struct {
	Resource  string          `json:"resource"`
	Namespace string          `json:"namespace,omitempty"`
	Name      string          `json:"name"`
	Revision  uint64          `json:"revision"`
	Object    json.RawMessage `json:"object,omitempty"`
}

// kinds finds a kind by the resource name objects are kept under.
var kinds = func() map[string]*api.Kind {
	m := map[string]*api.Kind{}
	for _, k := range api.Kinds() {
		m[resourceOf(k)] = k
	}
	return m
}()

func resourceOf(k *api.Kind) string { return k.GroupResource().String() }

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func logKey(prefix string, rev uint64, part int) string {
	return fmt.Sprintf("%s%s%020d/%06d", prefix, logDir, rev, part)
}

// logEnd is the first log key after every part of revision rev.
func logEnd(prefix string, rev uint64) string {
	return fmt.Sprintf("%s%s%020d/", prefix, logDir, rev+1)
}

// parseLogKey reads a log key's revision and part number.
func parseLogKey(prefix, key string) (rev uint64, n int, err error) {
	rest, ok := strings.CutPrefix(key, prefix+logDir)
	revs, parts, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		return 0, 0, fmt.Errorf("log key %q: not <revision>/<part>", key)
	}
	if rev, err = strconv.ParseUint(revs, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("log key %q: %w", key, err)
	}
	if n, err = strconv.Atoi(parts); err != nil {
		return 0, 0, fmt.Errorf("log key %q: %w", key, err)
	}
	return rev, n, nil
}

func objectKey(prefix, resource, name string) string {
	return prefix + objectsDir + resource + "/" + name
}

// parseObjectKey reads an object key's resource and namespace/name.
func parseObjectKey(prefix, key string) (resource, name string, err error) {
	rest, ok := strings.CutPrefix(key, prefix+objectsDir)
	resource, name, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || name == "" {
		return "", "", fmt.Errorf("object key %q: not <resource>/<name>", key)
	}
	return resource, name, nil
}

// encodeParts splits a commit's writes into parts of at most
// maxPartBytes, the last one marked.
func encodeParts(rev uint64, ops []store.Op) ([][]byte, error) {
	var out [][]byte
	cur := part{Revision: rev}
	size := 0
	flush := func(last bool) error {
		cur.Last = last
		b, err := json.Marshal(&cur)
		if err != nil {
			return fmt.Errorf("encode revision %d: %w", rev, err)
		}
		out = append(out, b)
		cur.Ops, size = nil, 0
		return nil
	}
	for _, op := range ops {
		lo := logOp{Resource: resourceOf(op.Kind), Namespace: op.Namespace, Name: op.Name, Revision: op.Revision, Object: op.Data}
		if op.Object != nil && op.Data == nil {
			return nil, fmt.Errorf("encode revision %d: %s %s: not encoded", rev, lo.Resource, objectName(op.Namespace, op.Name))
		}
		n := len(lo.Object) + len(lo.Resource) + len(lo.Namespace) + len(lo.Name) + 96
		if size > 0 && size+n > maxPartBytes {
			if err := flush(false); err != nil {
				return nil, err
			}
		}
		cur.Ops = append(cur.Ops, lo)
		size += n
	}
	if err := flush(true); err != nil {
		return nil, err
	}
	return out, nil
}

// decodePart reads a log part's value.
func decodePart(key string, value []byte) (*part, error) {
	var p part
	if err := json.Unmarshal(value, &p); err != nil {
		return nil, fmt.Errorf("decode %q: %w", key, err)
	}
	return &p, nil
}

// decodeOps turns a whole commit's parts into the store's writes, each
// object decoded.
func decodeOps(parts []*part) ([]store.Op, error) {
	var ops []store.Op
	for _, p := range parts {
		for _, lo := range p.Ops {
			k := kindOfResource(lo.Resource)
			if k == nil {
				return nil, fmt.Errorf("revision %d: unknown resource %q", p.Revision, lo.Resource)
			}
			op := store.Op{Kind: k, Namespace: lo.Namespace, Name: lo.Name, Revision: lo.Revision}
			if len(lo.Object) > 0 {
				obj, err := decodeObject(k, lo.Object)
				if err != nil {
					return nil, fmt.Errorf("revision %d: %s %s: %w", p.Revision, lo.Resource, objectName(lo.Namespace, lo.Name), err)
				}
				op.Object = obj
			}
			ops = append(ops, op)
		}
	}
	return ops, nil
}

func decodeObject(k *api.Kind, data []byte) (api.Object, error) {
	if k == nil || k.Custom {
		// A custom resource keeps its apiVersion and kind.
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(data, u); err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
		return u, nil
	}
	obj := k.New()
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	obj.GetObjectKind().SetGroupVersionKind(k.GVK)
	return obj, nil
}

// kindOfResource finds the kind objects are kept under resource: a
// built-in one, or a custom one whose CRD the store has met (a follower
// applies a CRD's commit before it decodes the next).
func kindOfResource(resource string) *api.Kind {
	if k := kinds[resource]; k != nil {
		return k
	}
	if k, ok := api.CustomKind(schema.ParseGroupResource(resource)); ok {
		return k
	}
	return nil
}

// customResource reports whether an unknown resource may be a custom
// one: it has a group. Load decodes those generically, before any CRD is
// registered; the store finds their kinds once everything is in.
func customResource(resource string) bool {
	return strings.Contains(resource, ".")
}

// assembler gathers the parts of commits as they come, in key order, and
// hands out each commit once its last part is in.
type assembler struct {
	prefix  string
	pending map[uint64][]*part
}

func newAssembler(prefix string) *assembler {
	return &assembler{prefix: prefix, pending: map[uint64][]*part{}}
}

// add takes one part and returns the commit's parts when it was the last.
func (a *assembler) add(key string, value []byte) (uint64, []*part, error) {
	rev, n, err := parseLogKey(a.prefix, key)
	if err != nil {
		return 0, nil, err
	}
	p, err := decodePart(key, value)
	if err != nil {
		return 0, nil, err
	}
	if p.Revision != rev {
		return 0, nil, fmt.Errorf("%q: holds revision %d", key, p.Revision)
	}
	parts := a.pending[rev]
	if n != len(parts) {
		// A part missing before this one: a commit a leader began and
		// never finished, begun again by the next one.
		parts = nil
		if n != 0 {
			delete(a.pending, rev)
			return 0, nil, fmt.Errorf("%q: part %d without the ones before it", key, n)
		}
	}
	parts = append(parts, p)
	if !p.Last {
		a.pending[rev] = parts
		return rev, nil, nil
	}
	delete(a.pending, rev)
	return rev, parts, nil
}

// drop forgets the parts of a commit whose keys were deleted: a new
// leader removes the parts of one its predecessor left unfinished.
func (a *assembler) drop(key string) {
	if rev, _, err := parseLogKey(a.prefix, key); err == nil {
		delete(a.pending, rev)
	}
}

// fold applies complete commits to a map of encoded objects by
// resource and name, in revision order; a deletion leaves a nil entry,
// which a checkpoint deletes and a load passes over.
func fold(objects map[string]map[string][]byte, parts []*part) {
	for _, p := range parts {
		for _, lo := range p.Ops {
			m := objects[lo.Resource]
			if m == nil {
				m = map[string][]byte{}
				objects[lo.Resource] = m
			}
			name := objectName(lo.Namespace, lo.Name)
			if len(lo.Object) == 0 {
				m[name] = nil
				continue
			}
			m[name] = lo.Object
		}
	}
}
