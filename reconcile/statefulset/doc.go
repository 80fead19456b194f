// Package statefulset holds the StatefulSet controller: pods with stable
// names NAME-ORDINAL, each with claims of its own, created, replaced and
// removed in order, and rolled out from the highest ordinal down to the
// partition, with the revisions of the template kept as
// ControllerRevisions.
package statefulset
