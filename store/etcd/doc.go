// Package etcd keeps the store in etcd, shared by several control planes:
// the leader, elected through etcd, appends each commit to a log there
// and folds the log into a checkpoint of every object now and then; the
// others load the checkpoint and the log and follow the log's watch.
package etcd
