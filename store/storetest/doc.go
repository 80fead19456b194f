// Package storetest holds what tests and benchmarks of the store and its
// backends share: realistic objects and a batched writer.
package storetest
