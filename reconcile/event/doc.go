// Package event records Events about objects for the control plane's
// controllers and scheduler: correlated (a repeat bumps a count), rate
// limited per object, written off the caller's path, and expired after a TTL.
package event
