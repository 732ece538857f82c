package s3store

import "sync"

// cacheBudget bounds the bytes an ETag cache holds (specs are small; this is a safety cap).
const cacheBudget = 32 << 20

// etagCache keeps object bodies by full S3 key with their ETag. A nil *etagCache is a
// disabled cache: get misses and the other methods do nothing.
type etagCache struct {
	mu      sync.Mutex
	budget  int
	size    int
	entries map[string]cachedBody
}

type cachedBody struct {
	etag string
	body []byte // owned by the cache; callers get copies
}

func newETagCache(budget int) *etagCache {
	return &etagCache{budget: budget, entries: map[string]cachedBody{}}
}

func (c *etagCache) get(key string) (cachedBody, bool) {
	if c == nil {
		return cachedBody{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	return e, ok
}

// put stores body (which the caller hands over) under key, evicting arbitrary entries to
// stay within the budget; a body larger than the budget is not kept.
func (c *etagCache) put(key, etag string, body []byte) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(key)
	if len(body) > c.budget {
		return
	}
	for k := range c.entries {
		if c.size+len(body) <= c.budget {
			break
		}
		c.remove(k)
	}
	c.entries[key] = cachedBody{etag: etag, body: body}
	c.size += len(body)
}

func (c *etagCache) drop(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(key)
}

// remove deletes key's entry; c.mu must be held.
func (c *etagCache) remove(key string) {
	if e, ok := c.entries[key]; ok {
		c.size -= len(e.body)
		delete(c.entries, key)
	}
}
