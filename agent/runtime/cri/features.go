package cri

import "github.com/berth-dev/berth/agent/runtime"

// Features are the pod fields, beyond the common ones, that the CRI
// runtime honours: the termination message, read from the file the
// runtime mounts at terminationMessagePath (or the end of the log). A
// pod that sets another runtime.Feature is refused by the agent.
func (r *Runtime) Features() []runtime.Feature {
	return []runtime.Feature{runtime.FeatureTermMessage}
}
