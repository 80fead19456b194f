// Package du measures the disk space a directory tree takes, as du(1)
// counts it, within a budget of entries: what the agent compares with a
// pod's ephemeral-storage limits.
package du
