// Package dir is the source of a directory (or one file) of manifests:
// watched with fsnotify, bursts of changes debounced into one revision,
// and relisted in full every interval to catch what the watch missed. The
// agent's static pods use it too, without recursion.
package dir
