// Package apply makes each revision of a source one store transaction:
// validated whole, then created, updated and pruned in dependency order,
// writing only what changed; it also reverts changes made outside the
// source (drift) and records what it did on the Source object.
package apply
