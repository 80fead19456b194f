package endpoints

import (
	"maps"
	"sync"
)

// selectorIndex remembers the selector of every service, indexed by one
// key=value pair of it, so that a pod change finds the services that select
// the pod by looking up its labels rather than scanning every service.
//
// It is fed by the Service watch (before the service's key is enqueued)
// and corrected by every reconcile, so a pod change that it misses
// happened before the service was enqueued, and the service's reconcile
// reads a snapshot that holds the change.
type selectorIndex struct {
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
}

func newSelectorIndex() *selectorIndex {
	return &selectorIndex{services: map[string]indexed{}, byPair: map[pair]map[string]struct{}{}}
}

// set records a service's selector; an empty one removes the service.
func (x *selectorIndex) set(namespace, key string, selector map[string]string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.services[key]; ok {
		if maps.Equal(old.selector, selector) {
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
	x.services[key] = indexed{selector: selector, at: at}
	set := x.byPair[at]
	if set == nil {
		set = map[string]struct{}{}
		x.byPair[at] = set
	}
	set[key] = struct{}{}
}

// remove forgets a service.
func (x *selectorIndex) remove(key string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.services[key]; ok {
		x.removeLocked(key, old)
	}
}

func (x *selectorIndex) removeLocked(key string, old indexed) {
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
func (x *selectorIndex) selecting(namespace string, labels map[string]string, out map[string]struct{}) {
	if len(labels) == 0 {
		return
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	for k, v := range labels {
		for key := range x.byPair[pair{namespace: namespace, key: k, value: v}] {
			if Selects(x.services[key].selector, labels) {
				out[key] = struct{}{}
			}
		}
	}
}
