package sched

import "sync"

// StateData is what a plugin computes once for a scheduling attempt and
// reads back for each node, kept in the attempt's CycleState under the
// plugin's StateKey.
type StateData any

// StateKey names one plugin's data in a CycleState. Keys are made once,
// as package variables, by NewStateKey: a key is an index, so reading a
// plugin's state in the per-node loop costs a slice access, not the map
// look-up of kube-scheduler's string keys.
type StateKey struct {
	name  string
	index int
}

// String is the name the key was made with.
func (k StateKey) String() string { return k.name }

var stateKeys struct {
	sync.Mutex
	names []string
}

// NewStateKey makes the key a plugin keeps its cycle state under. name
// is for errors and debugging; two keys of one name are still two keys.
func NewStateKey(name string) StateKey {
	stateKeys.Lock()
	defer stateKeys.Unlock()
	stateKeys.names = append(stateKeys.names, name)
	return StateKey{name: name, index: len(stateKeys.names) - 1}
}

// CycleState is one scheduling attempt's state, kube-scheduler's
// framework.CycleState: what the PreFilter and PreScore plugins found for
// the pod over the cycle's nodes, read by their Filter and Score for each
// node. The framework owns it and passes it through PreFilter, Filter,
// PreScore, Score and Normalize; nothing of an attempt is left on the
// PodInfo that the queue and the cache keep.
//
// A framework reuses one CycleState from attempt to attempt: at the end
// of one, what the plugins wrote can no longer be Read, and is handed
// back once by Reuse, for its buffers.
type CycleState struct {
	// nodes are the nodes the cycle schedules over; nil for a check of
	// one node outside a cycle (Framework.Filter), where plugins fall
	// back to what the node itself tells.
	nodes *Nodes
	data  []StateData
	spare []StateData
}

// NewCycleState is an empty state over nodes (nil outside a cycle).
func NewCycleState(nodes *Nodes) *CycleState { return &CycleState{nodes: nodes} }

// Nodes are the nodes of the cycle, nil outside one.
func (s *CycleState) Nodes() *Nodes {
	if s == nil {
		return nil
	}
	return s.nodes
}

// Read returns what was written under key in this attempt, nil if
// nothing was. A nil CycleState holds nothing.
func (s *CycleState) Read(key StateKey) StateData {
	if s == nil || key.index >= len(s.data) {
		return nil
	}
	return s.data[key.index]
}

// Write keeps data under key for the rest of the attempt.
func (s *CycleState) Write(key StateKey, data StateData) {
	if key.index >= len(s.data) {
		s.data = append(s.data, make([]StateData, key.index+1-len(s.data))...)
	}
	s.data[key.index] = data
}

// Reuse returns what was written under key in an earlier attempt, nil if
// nothing, so that a plugin can refill its buffers instead of allocating
// them for every pod. The plugin must reset all of it before it writes it
// back: it holds another pod's state.
func (s *CycleState) Reuse(key StateKey) StateData {
	if key.index >= len(s.spare) {
		return nil
	}
	d := s.spare[key.index]
	s.spare[key.index] = nil
	return d
}

// namespaces are the labels of the namespaces by name, for the terms'
// namespaceSelectors; nil outside a cycle.
func (s *CycleState) namespaces() map[string]map[string]string {
	if s == nil || s.nodes == nil {
		return nil
	}
	return s.nodes.namespaces
}

// reset ends an attempt and begins the next over nodes: what was written
// becomes spare, for Reuse.
func (s *CycleState) reset(nodes *Nodes) {
	s.nodes = nodes
	if len(s.spare) < len(s.data) {
		s.spare = append(s.spare, make([]StateData, len(s.data)-len(s.spare))...)
	}
	for i, d := range s.data {
		if d != nil {
			s.spare[i] = d
			s.data[i] = nil
		}
	}
}
