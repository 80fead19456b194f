// Package gc holds the garbage collector: it deletes the dependents of a
// deleted owner (ownerReferences), honours the orphan and foreground
// propagation finalizers the API server records, and cleans dangling
// ownerReferences.
package gc
