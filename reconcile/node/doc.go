// Package node holds the node lifecycle controller: it marks nodes whose
// agent stopped heartbeating Unknown, taints them, and evicts their pods so
// that their controllers recreate them elsewhere.
package node
