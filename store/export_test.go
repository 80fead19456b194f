package store

// Waiting is how many transactions and answers wait behind the commit
// under way: a test of a stalled backend tells by it that a request
// waits for what it read, and has not answered early.
func (s *Store) Waiting() int { return len(s.commits) }
