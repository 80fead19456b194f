// Package bolt is the store's durable backend on one bbolt file: a bucket
// per resource holding each object as JSON under "namespace/name", and the
// newest revision, all written by one fsynced transaction per group commit.
package bolt
