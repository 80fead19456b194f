// Package store keeps berth's desired and observed state: go-memdb tables,
// one per kind, behind transactions with preconditions, a global revision,
// consistent snapshots and a bounded change log that feeds watches. A
// Backend makes it durable (store/bolt) or keeps it in memory; a
// Replicated one (store/etcd) shares it between control planes, one
// leading and the others following its commits.
package store
