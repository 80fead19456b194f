package volume

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/sched"
)

// modeSet is a set of access modes, one bit each.
type modeSet uint8

func modesOf(modes []api.PersistentVolumeAccessMode) modeSet {
	var s modeSet
	for _, m := range modes {
		switch m {
		case api.ReadWriteOnce:
			s |= 1
		case api.ReadOnlyMany:
			s |= 2
		case api.ReadWriteMany:
			s |= 4
		case api.ReadWriteOncePod:
			s |= 8
		}
	}
	return s
}

// covers reports whether every mode of o is in s.
func (s modeSet) covers(o modeSet) bool { return s&o == o }

// Request is what matching asks of a claim, computed once per claim: its
// class, size, access modes, volume mode and selector, and, for a claim
// waiting for its first consumer, the node that consumer runs on.
type Request struct {
	// Class is the storage class asked for, "" for none.
	Class string
	// Size is the storage requested, in bytes.
	Size     int64
	modes    modeSet
	block    bool
	selector labels.Selector
	// NodeName and NodeLabels are the node the volume must be usable on,
	// when constrained.
	NodeName    string
	NodeLabels  map[string]string
	constrained bool
}

// NewRequest compiles claim's request. class is the claim's storage class
// ("" for none). node, if not nil, is the node the volume must be usable
// on (the claim's selected node).
func NewRequest(claim *api.PersistentVolumeClaim, node *api.Node) (*Request, error) {
	r := &Request{
		Class: claimClass(claim),
		modes: modesOf(claim.Spec.AccessModes),
		block: claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == api.PersistentVolumeBlock,
	}
	if q, ok := claim.Spec.Resources.Requests[api.ResourceStorage]; ok {
		r.Size = q.Value()
	}
	if claim.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(claim.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("claim %s/%s: selector: %w", claim.Namespace, claim.Name, err)
		}
		r.selector = sel
	}
	if node != nil {
		r.NodeName, r.NodeLabels, r.constrained = node.Name, node.Labels, true
	}
	return r, nil
}

// claimClass is the class a claim asks for; nil and "" both mean none
// (admission gives a claim without one the default class).
func claimClass(claim *api.PersistentVolumeClaim) string {
	if claim.Spec.StorageClassName == nil {
		return ""
	}
	return *claim.Spec.StorageClassName
}

// volumeSize is a volume's storage capacity in bytes.
func volumeSize(pv *api.PersistentVolume) int64 {
	q, ok := pv.Spec.Capacity[api.ResourceStorage]
	if !ok {
		return 0
	}
	return q.Value()
}

func isBlock(m *api.PersistentVolumeMode) bool { return m != nil && *m == api.PersistentVolumeBlock }

// Mismatch says why a volume cannot serve a claim, "" when it can. It is
// the whole matching rule for one pair, used by the index after it has
// narrowed the candidates and by the binder to check a pre-bound pair.
func (r *Request) Mismatch(pv *api.PersistentVolume) string {
	switch {
	case pv.Spec.StorageClassName != r.Class:
		return fmt.Sprintf("storage class %q, claim wants %q", pv.Spec.StorageClassName, r.Class)
	case volumeSize(pv) < r.Size:
		return "capacity is smaller than the claim's request"
	case !modesOf(pv.Spec.AccessModes).covers(r.modes):
		return "access modes do not include the claim's"
	case isBlock(pv.Spec.VolumeMode) != r.block:
		return "volume mode differs from the claim's"
	}
	return r.mismatchRest(pv)
}

// mismatchRest checks what the index does not: the selector and the node.
func (r *Request) mismatchRest(pv *api.PersistentVolume) string {
	if r.selector != nil && !r.selector.Matches(labels.Set(pv.Labels)) {
		return "labels do not match the claim's selector"
	}
	if r.constrained && pv.Spec.NodeAffinity != nil &&
		!sched.NodeSelectorMatches(pv.Spec.NodeAffinity.Required, r.NodeName, r.NodeLabels) {
		return "node affinity does not admit node " + r.NodeName
	}
	return ""
}

// Available reports whether a volume may be bound to a claim that does not
// name it: not bound or pre-bound, not released, failed or going away.
func Available(pv *api.PersistentVolume) bool {
	return pv.Spec.ClaimRef == nil && pv.DeletionTimestamp == nil &&
		pv.Status.Phase != api.VolumeReleased && pv.Status.Phase != api.VolumeFailed
}

// Index holds the available volumes grouped by storage class, access
// modes and volume mode, each group in capacity order, so that finding the
// smallest volume that fits a claim is a binary search, not a scan of
// every volume. It is not safe for concurrent use.
type Index struct {
	classes map[string]map[bucketKey]*bucket
	byName  map[string]*entry
}

type bucketKey struct {
	modes modeSet
	block bool
}

// bucket is one group: entries sorted by size then name once clean. A
// removed entry stays in place marked dead until the next sort; next
// skips runs of dead entries (with path compression), so that taking
// volumes from the front one after another stays cheap.
type bucket struct {
	modes   modeSet
	entries []*entry
	next    []int32
	dirty   bool
	dead    int
}

type entry struct {
	pv     *api.PersistentVolume
	size   int64
	dead   bool
	bucket *bucket
}

// NewIndex returns an empty Index.
func NewIndex() *Index {
	return &Index{classes: map[string]map[bucketKey]*bucket{}, byName: map[string]*entry{}}
}

// Len is how many volumes the index holds.
func (x *Index) Len() int { return len(x.byName) }

// Set records pv's current state: held if Available, dropped otherwise.
func (x *Index) Set(pv *api.PersistentVolume) {
	x.Remove(pv.Name)
	if !Available(pv) {
		return
	}
	key := bucketKey{modes: modesOf(pv.Spec.AccessModes), block: isBlock(pv.Spec.VolumeMode)}
	cls := x.classes[pv.Spec.StorageClassName]
	if cls == nil {
		cls = map[bucketKey]*bucket{}
		x.classes[pv.Spec.StorageClassName] = cls
	}
	b := cls[key]
	if b == nil {
		b = &bucket{modes: key.modes}
		cls[key] = b
	}
	e := &entry{pv: pv, size: volumeSize(pv), bucket: b}
	b.entries = append(b.entries, e)
	b.dirty = true
	x.byName[pv.Name] = e
}

// Remove drops the volume named name, if held.
func (x *Index) Remove(name string) {
	e := x.byName[name]
	if e == nil {
		return
	}
	delete(x.byName, name)
	e.dead = true
	e.bucket.dead++
}

// Match returns the smallest held volume that satisfies r (ties: fewer
// access modes, then name), or nil. It does not remove it: the caller
// removes it once it has claimed it.
func (x *Index) Match(r *Request) *api.PersistentVolume {
	var best *entry
	for key, b := range x.classes[r.Class] {
		if key.block != r.block || !b.modes.covers(r.modes) {
			continue
		}
		e := b.first(r, best)
		if e != nil && (best == nil || less(e, best)) {
			best = e
		}
	}
	if best == nil {
		return nil
	}
	return best.pv
}

// less orders candidates from different buckets: smaller first, then the
// one with fewer access modes (keeping wider volumes for claims that need
// them), then by name.
func less(a, b *entry) bool {
	if a.size != b.size {
		return a.size < b.size
	}
	am, bm := bits.OnesCount8(uint8(a.bucket.modes)), bits.OnesCount8(uint8(b.bucket.modes))
	if am != bm {
		return am < bm
	}
	return a.pv.Name < b.pv.Name
}

// first returns the first live entry of b that fits r, stopping once
// entries grow past bound (a candidate already found elsewhere).
func (b *bucket) first(r *Request, bound *entry) *entry {
	b.clean()
	n := len(b.entries)
	i, _ := slices.BinarySearchFunc(b.entries, r.Size, func(e *entry, size int64) int { return cmp.Compare(e.size, size) })
	for i = b.live(i); i < n; i = b.live(i + 1) {
		e := b.entries[i]
		if bound != nil && e.size > bound.size {
			return nil
		}
		if r.mismatchRest(e.pv) == "" {
			return e
		}
	}
	return nil
}

// live returns the first index at or after i whose entry is not dead,
// shortening the skip chain it followed.
func (b *bucket) live(i int) int {
	n := len(b.entries)
	j := i
	for j < n && b.entries[j].dead {
		j = int(b.next[j])
	}
	for i < j {
		nx := int(b.next[i])
		b.next[i] = int32(j)
		i = nx
	}
	return j
}

// clean sorts the bucket after additions, dropping dead entries, or
// compacts it once most of it is dead.
func (b *bucket) clean() {
	if !b.dirty && b.dead <= len(b.entries)/2 {
		return
	}
	live := b.entries[:0]
	for _, e := range b.entries {
		if !e.dead {
			live = append(live, e)
		}
	}
	clear(b.entries[len(live):])
	b.entries, b.dead = live, 0
	if b.dirty {
		slices.SortFunc(b.entries, func(x, y *entry) int {
			if c := cmp.Compare(x.size, y.size); c != 0 {
				return c
			}
			return cmp.Compare(x.pv.Name, y.pv.Name)
		})
		b.dirty = false
	}
	if cap(b.next) < len(b.entries) {
		b.next = make([]int32, len(b.entries))
	}
	b.next = b.next[:len(b.entries)]
	for i := range b.next {
		b.next[i] = int32(i + 1)
	}
}
