package members

import (
	"maps"
	"slices"
	"sync"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/store"
)

// Index remembers the selector of every service, indexed by one
// key=value pair of it, so that a pod change finds the services that select
// the pod by looking up its labels rather than scanning every service: a
// pod that no service selects costs a controller nothing but the lookup.
// The endpoints and endpointslice controllers each keep one.
//
// It is fed by the Service watch (before the service's key is enqueued)
// and corrected by every reconcile, so a pod change that it misses
// happened before the service was enqueued, and the service's reconcile
// reads a snapshot that holds the change.
//
// Each selector is kept with the store revision it was read at, and an
// observation older than that is ignored: a reconcile that read its
// snapshot before a change to the service, and observes after the watch
// recorded the change, would otherwise put back the old selector, and
// the pods that only the new one selects would be looked up in vain
// until the next change to the service. A service forgotten (deleted, or
// its selector emptied) leaves no revision behind: an older observation
// may index it again, which costs no more than reconciles of its key,
// each of which forgets it anew.
type Index struct {
	mu sync.RWMutex
	// services maps a service key to its selector and the pair it is
	// indexed under.
	services map[string]indexed
	// byPair maps namespace, key and value of a selector pair to the keys
	// of the services indexed under it.
	byPair map[pair]map[string]struct{}
}

type pair struct{ namespace, key, value string }

type indexed struct {
	selector map[string]string
	at       pair
	// revision is the store revision the selector was read at.
	revision uint64
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{services: map[string]indexed{}, byPair: map[pair]map[string]struct{}{}}
}

// Observe records the service of a key as it was at a store revision (a
// reconcile's snapshot, a watch event); nil forgets a service that is
// gone. What is older than the revision the index holds for the key
// changes nothing.
func (x *Index) Observe(key string, svc *api.Service, revision uint64) {
	var namespace string
	var selector map[string]string
	if svc != nil {
		namespace, selector = svc.Namespace, SelectorOf(svc)
	}
	x.set(namespace, key, selector, revision)
}

// set records a service's selector read at a revision; an empty one
// removes the service.
func (x *Index) set(namespace, key string, selector map[string]string, revision uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.services[key]; ok {
		if revision < old.revision {
			return
		}
		if maps.Equal(old.selector, selector) {
			old.revision = revision
			x.services[key] = old
			return
		}
		x.removeLocked(key, old)
	}
	if len(selector) == 0 {
		return
	}
	// Index under the smallest key: any pair works, and a fixed choice
	// makes the index deterministic.
	var at pair
	first := true
	for k, v := range selector {
		if first || k < at.key {
			at = pair{namespace: namespace, key: k, value: v}
			first = false
		}
	}
	x.services[key] = indexed{selector: selector, at: at, revision: revision}
	set := x.byPair[at]
	if set == nil {
		set = map[string]struct{}{}
		x.byPair[at] = set
	}
	set[key] = struct{}{}
}

// empty reports whether no service is indexed.
func (x *Index) empty() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.services) == 0
}

func (x *Index) removeLocked(key string, old indexed) {
	delete(x.services, key)
	if set := x.byPair[old.at]; set != nil {
		delete(set, key)
		if len(set) == 0 {
			delete(x.byPair, old.at)
		}
	}
}

// selecting adds to out the keys of the services in namespace whose
// selector selects labels.
func (x *Index) selecting(namespace string, labels map[string]string, out map[string]struct{}) {
	if len(labels) == 0 {
		return
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	for k, v := range labels {
		for key := range x.byPair[pair{namespace: namespace, key: k, value: v}] {
			if selects(x.services[key].selector, labels) {
				out[key] = struct{}{}
			}
		}
	}
}

// ServiceKeys is the Keys of a watch of Services: the service's own key,
// its selector recorded (or forgotten) first, at the event's revision.
func (x *Index) ServiceKeys(e store.Event) []string {
	key := reconcile.ObjectKey(e.Object)
	if e.Type == store.Deleted {
		x.Observe(key, nil, e.Revision)
	} else {
		x.Observe(key, e.Object.(*api.Service), e.Revision)
	}
	return []string{key}
}

// PodKeys is the Keys of a watch of Pods: the keys of the services that
// select the pod before or after the change, none for a change that
// cannot move an endpoint. A pod no service selects costs a few map
// lookups.
func (x *Index) PodKeys(e store.Event) []string {
	if x.empty() {
		// No service selects anything: not even the change is looked at.
		return nil
	}
	pod := e.Object.(*api.Pod)
	var old *api.Pod
	if e.Type == store.Modified && e.Old != nil {
		old = e.Old.(*api.Pod)
		if !relevantChange(old, pod) {
			return nil
		}
	}
	found := map[string]struct{}{}
	x.selecting(pod.Namespace, pod.Labels, found)
	if old != nil {
		x.selecting(old.Namespace, old.Labels, found)
	}
	if len(found) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(found))
}

// relevantChange reports whether a pod update can change any Endpoints or
// EndpointSlice: most pod writes (restart counts, probe times) cannot.
func relevantChange(old, pod *api.Pod) bool {
	if old.Status.PodIP != pod.Status.PodIP ||
		!slices.Equal(old.Status.PodIPs, pod.Status.PodIPs) ||
		old.Status.Phase != pod.Status.Phase ||
		old.Ready() != pod.Ready() ||
		(old.DeletionTimestamp == nil) != (pod.DeletionTimestamp == nil) ||
		old.Spec.NodeName != pod.Spec.NodeName ||
		Hostname(old) != Hostname(pod) ||
		old.UID != pod.UID ||
		!maps.Equal(old.Labels, pod.Labels) {
		return true
	}
	if len(old.Spec.Containers) != len(pod.Spec.Containers) {
		return true
	}
	for i := range old.Spec.Containers {
		if !slices.Equal(old.Spec.Containers[i].Ports, pod.Spec.Containers[i].Ports) {
			return true
		}
	}
	return false
}

// SelectorOf is the selector a service's endpoints are kept by; nil for
// a service that has none kept (no selector, or ExternalName).
func SelectorOf(svc *api.Service) map[string]string {
	if svc.Spec.Type == api.ServiceTypeExternalName {
		return nil
	}
	return svc.Spec.Selector
}
