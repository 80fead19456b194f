package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// maxVerifiedTokens bounds the cache of verified tokens; past it the cache
// starts again empty, which costs one verification per token in use.
const maxVerifiedTokens = 16384

// verifiedTokens remembers the claims of tokens whose ES256 signature has
// checked out, keyed by the token's digest, so that an agent's every
// request does not pay a signature verification (a tenth of the CPU of a
// 5,000-node `berth sim` run). Only the signature is remembered: expiry is
// checked again on every use, and the identity checks that read the store
// (a service account's pod still exists) run every time.
type verifiedTokens struct {
	mu sync.RWMutex
	m  map[[sha256.Size]byte]*Claims
}

func (v *verifiedTokens) get(digest [sha256.Size]byte, now time.Time) (*Claims, bool) {
	v.mu.RLock()
	c, ok := v.m[digest]
	v.mu.RUnlock()
	if !ok {
		return nil, false
	}
	if c.ExpiresAt != nil && !now.Before(c.ExpiresAt.Time) {
		v.mu.Lock()
		delete(v.m, digest)
		v.mu.Unlock()
		return nil, false
	}
	return c, true
}

func (v *verifiedTokens) put(digest [sha256.Size]byte, c *Claims) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= maxVerifiedTokens {
		v.m = make(map[[sha256.Size]byte]*Claims)
	}
	v.m[digest] = c
}
