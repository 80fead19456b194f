// Package plan answers, before a revision is applied, whether the cluster
// can run it: on a fork of the live store it applies the revision as the
// applier would, runs the controllers that turn workloads into pods and
// the real scheduler over the live nodes, and reports what would not fit.
package plan
