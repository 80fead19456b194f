// Package quota enforces ResourceQuotas for every writer through a store
// hook, Admit, that checks each write inside its transaction and charges,
// or frees, its usage there too: quota is freed as soon as an object goes,
// a pod finishes or starts terminating, not at a later recount as in
// Kubernetes. Its controller recounts each namespace's quotas (when a
// quota or its limits are new, when usage is freed, and every five minutes)
// to put right what the hook could not see.
package quota
