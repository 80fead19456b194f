package history

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var revisionKind = api.MustLookupResource("controllerrevisions")

// Patch is a revision's data for a pod template: the strategic merge patch
// that puts the template back, as Kubernetes' StatefulSet and DaemonSet
// controllers record it and kubectl rollout undo applies it.
func Patch(t *api.PodTemplateSpec) ([]byte, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": m}})
}

// Hash is the hash of a revision's data and the owner's collision count,
// FNV-32a rendered with rand.SafeEncodeString, as Kubernetes' HashControllerRevision.
func Hash(data []byte, collisionCount *int32) string {
	h := fnv.New32a()
	h.Write(data)
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// Owned returns the revisions owner controls, oldest revision first.
func Owned(s *store.Store, owner api.Object) ([]*api.ControllerRevision, error) {
	objs, _, err := s.List(revisionKind, store.Filter{Namespace: owner.GetNamespace(), Index: store.IndexOwner, Value: string(owner.GetUID())})
	if err != nil {
		return nil, err
	}
	var out []*api.ControllerRevision
	for _, o := range objs {
		if ref := api.ControllerOf(o); ref != nil && ref.UID == owner.GetUID() {
			out = append(out, o.(*api.ControllerRevision))
		}
	}
	slices.SortStableFunc(out, func(a, b *api.ControllerRevision) int {
		if a.Revision != b.Revision {
			return int(a.Revision - b.Revision)
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return out, nil
}

// Ensure returns the revision of data among revs, the owner's revisions
// oldest first, making it the newest if it is not (a rollback), or
// creating it. A name taken by other data raises *collisionCount, which
// the caller writes to the owner's status, and the name is tried again.
// labels are the revision's labels (the owner's selector's). A new
// revision takes the owner's annotations (Annotations), its
// kubernetes.io/change-cause among them, as Kubernetes' StatefulSet and
// DaemonSet controllers copy them; one gone back to keeps those it was
// made with, as there.
func Ensure(ctx context.Context, s *store.Store, owner api.Object, gvk schema.GroupVersionKind, labels map[string]string,
	data []byte, revs []*api.ControllerRevision, collisionCount *int32) (*api.ControllerRevision, error) {
	next := int64(1)
	if len(revs) > 0 {
		next = revs[len(revs)-1].Revision + 1
	}
	for i := len(revs) - 1; i >= 0; i-- {
		r := revs[i]
		if !bytes.Equal(r.Data.Raw, data) {
			continue
		}
		if i == len(revs)-1 {
			return r, nil
		}
		u := r.DeepCopy()
		u.Revision = next
		obj, err := s.Update(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("renumber controllerrevision %s/%s: %w", r.Namespace, r.Name, err)
		}
		return obj.(*api.ControllerRevision), nil
	}
	for range 100 {
		// No collision yet hashes the data alone, as an owner whose
		// status has no collisionCount does in Kubernetes.
		var cc *int32
		if *collisionCount > 0 {
			cc = collisionCount
		}
		hash := Hash(data, cc)
		r := &api.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:       owner.GetNamespace(),
				Name:            revisionName(owner.GetName(), hash),
				Labels:          maps.Clone(labels),
				Annotations:     Annotations(owner.GetAnnotations()),
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)},
			},
			Data:     runtime.RawExtension{Raw: data},
			Revision: next,
		}
		if r.Labels == nil {
			r.Labels = map[string]string{}
		}
		r.Labels[api.LabelControllerRevisionHashKey] = hash
		obj, err := s.Create(ctx, r)
		if err == nil {
			return obj.(*api.ControllerRevision), nil
		}
		if !store.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create controllerrevision %s/%s: %w", r.Namespace, r.Name, err)
		}
		taken, gerr := s.Get(revisionKind, r.Namespace, r.Name)
		if gerr == nil {
			if t := taken.(*api.ControllerRevision); bytes.Equal(t.Data.Raw, data) && api.ControllerOf(t) != nil && api.ControllerOf(t).UID == owner.GetUID() {
				return t, nil
			}
		}
		*collisionCount++
	}
	return nil, fmt.Errorf("controllerrevision of %s/%s: no free name after 100 collisions", owner.GetNamespace(), owner.GetName())
}

// Annotations are those of an owner's annotations that its revisions
// take: all but the owner's own (api.DeploymentOwnAnnotation: its last
// applied configuration, berth's source and prune marks, which on a
// revision would make it the source's to prune), nil for none. So
// kubectl rollout history shows each revision's change-cause, as it does
// for a Deployment's ReplicaSets.
func Annotations(owner map[string]string) map[string]string {
	var out map[string]string
	for k, v := range owner {
		if api.DeploymentOwnAnnotation(k) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// revisionName is OWNER-HASH, cut so that it stays a valid name.
func revisionName(owner, hash string) string {
	const max = 253
	if len(owner) > max-1-len(hash) {
		owner = owner[:max-1-len(hash)]
	}
	return owner + "-" + hash
}

// Trim deletes the oldest revisions beyond limit, never one in live (the
// names of the revisions pods or the status still use).
func Trim(ctx context.Context, s *store.Store, revs []*api.ControllerRevision, live map[string]bool, limit int32) error {
	var old []*api.ControllerRevision
	for _, r := range revs {
		if !live[r.Name] {
			old = append(old, r)
		}
	}
	for i := 0; i < len(old)-int(limit); i++ {
		r := old[i]
		_, err := s.Delete(ctx, revisionKind, r.Namespace, r.Name, store.DeleteOptions{Preconditions: &store.Preconditions{UID: string(r.UID)}})
		if err != nil && !store.IsNotFound(err) {
			return fmt.Errorf("delete controllerrevision %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	return nil
}
