package apply

import (
	"encoding/json"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/strategy"
)

// merge returns what the store should hold for an object the source
// declares as desired and that exists as live: the desired object with
// what the source does not own taken from live. prev is what the source
// applied last time (nil when unknown, as after a restart).
//
// The source owns its manifest; the server owns uid, resourceVersion,
// generation, creation and deletion stamps, managedFields and status; the
// controllers own the fields they set that a manifest leaves out (a pod's
// node, a claim's volume, a volume's claim, a service's clusterIP),
// finalizers and owner references a manifest does not name, and labels and
// annotations nobody declared. Labels and annotations merge three ways, as
// kubectl apply does: a key the manifest sets wins, a key the previous
// manifest set and this one does not is removed, any other live key stays
// (a controller's revision annotation, a label added by hand).
func merge(desired, live, prev api.Object) api.Object {
	out := desired.DeepCopyObject().(api.Object)
	out.SetUID(live.GetUID())
	out.SetResourceVersion(live.GetResourceVersion())
	out.SetGeneration(live.GetGeneration())
	out.SetCreationTimestamp(live.GetCreationTimestamp())
	out.SetDeletionTimestamp(live.GetDeletionTimestamp())
	out.SetDeletionGracePeriodSeconds(live.GetDeletionGracePeriodSeconds())
	out.SetManagedFields(live.GetManagedFields())
	var prevAnn, prevLabels map[string]string
	if prev != nil {
		prevAnn, prevLabels = prev.GetAnnotations(), prev.GetLabels()
	}
	out.SetAnnotations(merge3(live.GetAnnotations(), desired.GetAnnotations(), prevAnn, prev != nil))
	out.SetLabels(merge3(live.GetLabels(), desired.GetLabels(), prevLabels, prev != nil))
	if len(desired.GetFinalizers()) == 0 {
		out.SetFinalizers(live.GetFinalizers())
	}
	if len(desired.GetOwnerReferences()) == 0 {
		out.SetOwnerReferences(live.GetOwnerReferences())
	}
	if k := api.KindOf(out); k != nil {
		// What a write to the object keeps, as the API server keeps it:
		// the status, a namespace's finalizers.
		strategy.For(k).PrepareForUpdate(out, live)
	}
	keepControllerFields(out, live)
	return out
}

// merge3 merges string maps as described on merge. Without a previous
// manifest (known false) no live key is removed: it cannot be told from
// one a controller added.
func merge3(live, desired, prev map[string]string, known bool) map[string]string {
	out := make(map[string]string, len(live)+len(desired))
	for k, v := range live {
		if _, was := prev[k]; known && was {
			if _, still := desired[k]; !still {
				continue
			}
		}
		out[k] = v
	}
	for k, v := range desired {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// keepControllerFields keeps the spec fields controllers set when the
// manifest leaves them out, so that applying a manifest never unbinds a
// pod or a claim.
func keepControllerFields(out, live api.Object) {
	switch o := out.(type) {
	case *api.Pod:
		if o.Spec.NodeName == "" {
			o.Spec.NodeName = live.(*api.Pod).Spec.NodeName
		}
	case *api.PersistentVolumeClaim:
		l := live.(*api.PersistentVolumeClaim)
		if o.Spec.VolumeName == "" {
			o.Spec.VolumeName = l.Spec.VolumeName
		}
		if o.Spec.StorageClassName == nil {
			o.Spec.StorageClassName = l.Spec.StorageClassName
		}
	case *api.PersistentVolume:
		if o.Spec.ClaimRef == nil {
			o.Spec.ClaimRef = live.(*api.PersistentVolume).Spec.ClaimRef
		}
	case *api.Service:
		l := live.(*api.Service)
		if o.Spec.ClusterIP == "" && len(o.Spec.ClusterIPs) == 0 {
			o.Spec.ClusterIP, o.Spec.ClusterIPs = l.Spec.ClusterIP, l.Spec.ClusterIPs
		}
	}
}

// equal reports whether two objects hold the same thing, by Kubernetes'
// semantic equality (quantities by value, nil and empty alike).
func equal(a, b api.Object) bool {
	return reflect.DeepEqual(a, b) || equality.Semantic.DeepEqual(a, b)
}

// serverFields are the fields only the server writes, left out when
// comparing or showing what a manifest changes.
var serverFields = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds"}

// changedFields lists the paths (up to three levels deep, as
// "spec.replicas" or "metadata.labels.tier") where two versions of an
// object differ, status and server-set fields aside: what a drift event
// names.
func changedFields(from, to api.Object) []string {
	a, b := document(from), document(to)
	var out []string
	diffPaths("", a, b, 3, &out)
	slices.Sort(out)
	return out
}

func document(obj api.Object) map[string]any {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	var doc map[string]any
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	delete(doc, "status")
	if meta, ok := doc["metadata"].(map[string]any); ok {
		for _, f := range serverFields {
			delete(meta, f)
		}
	}
	return doc
}

func diffPaths(prefix string, a, b any, depth int, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok || depth == 0 {
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, prefix)
		}
		return
	}
	for k, av := range am {
		diffPaths(join(prefix, k), av, bm[k], depth-1, out)
	}
	for k, bv := range bm {
		if _, ok := am[k]; !ok {
			diffPaths(join(prefix, k), nil, bv, depth-1, out)
		}
	}
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}
