// Package disruption holds the disruption controller: it counts the pods
// each PodDisruptionBudget guards into the budget's status (expected,
// healthy and desired pods, and how many may be evicted now), which the
// pods/eviction subresource reads and spends.
package disruption
