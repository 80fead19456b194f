// Package history keeps the ControllerRevisions of a StatefulSet or a
// DaemonSet: one per pod template rolled out, named for the template's
// hash and numbered in order, so that `kubectl rollout history` lists them
// and `kubectl rollout undo` patches the owner back with one.
package history
