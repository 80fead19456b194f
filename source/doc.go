// Package source turns a place that holds manifests (a git repository, a
// directory, a URL) into a stream of revisions: each one every object the
// place holds, decoded, or every error that stops it from being applied. It
// knows nothing of the store; the applier and the agent's static pods both
// consume it. The subpackages dir, git and http are the three kinds of place.
package source
