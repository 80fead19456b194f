// Package table holds the columns `berth get` prints for each kind, as
// data: one definition per kind with a cell function per column. The CLI
// and the API server's Table responses (what kubectl asks for with
// as=Table) read the same definitions, so `berth get` and `kubectl get`
// show the same columns and the same cells.
package table
