package partners

import (
	"sync"
	"time"
)

// KeyCacheTTL is how long an authenticated key is trusted without asking the
// database again: every request needs its partner, and a database round trip per
// request for a row that practically never changes is most of a read's cost. A
// key revoked or rolled empties every instance's cache at its next WatchKeys
// read (KeysWatchInterval); the TTL bounds an entry when that read cannot run.
const KeyCacheTTL = 30 * time.Second

// KeyCacheSize bounds how many keys each instance remembers.
const KeyCacheSize = 10_000

// keyCache maps key hashes to their partners for a short time. Only keys that
// authenticated are cached, so unknown keys cannot fill it.
type keyCache struct {
	mu      sync.RWMutex
	ttl     time.Duration
	max     int
	entries map[string]keyEntry
}

type keyEntry struct {
	p       *Partner
	expires time.Time
}

func newKeyCache(max int, ttl time.Duration) *keyCache {
	return &keyCache{ttl: ttl, max: max, entries: make(map[string]keyEntry)}
}

func (c *keyCache) get(hash string) (*Partner, bool) {
	c.mu.RLock()
	e, ok := c.entries[hash]
	c.mu.RUnlock()
	if !ok || time.Now().After(e.expires) {
		return nil, false
	}
	p := *e.p // callers may not change the cached partner
	return &p, true
}

func (c *keyCache) put(hash string, p *Partner) {
	now := time.Now()
	cp := *p
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for h, e := range c.entries {
			if now.After(e.expires) {
				delete(c.entries, h)
			}
		}
		for h := range c.entries { // still full: drop arbitrary entries
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, h)
		}
	}
	until := now.Add(c.ttl)
	if p.KeyExpiresAt != nil && p.KeyExpiresAt.Before(until) { // a rolled key: never trusted past its end
		until = *p.KeyExpiresAt
	}
	c.entries[hash] = keyEntry{p: &cp, expires: until}
}

func (c *keyCache) forget(hash string) {
	c.mu.Lock()
	delete(c.entries, hash)
	c.mu.Unlock()
}

// clear forgets every key (a key changed somewhere: WatchKeys).
func (c *keyCache) clear() {
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
}
