// Package git is the source of a git repository, read with go-git: one
// bare clone per source kept in a cache folder and fetched (shallow where
// the ref allows) only when listing the remote shows the ref has moved;
// manifests are read from the commit's tree, never checked out.
package git
