// Package namespace holds the namespace controller: it keeps the default
// namespace in being and empties a namespace being deleted before letting
// it go.
package namespace
