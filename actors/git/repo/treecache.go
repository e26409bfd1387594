package repo

import (
	"slices"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// treeCache keeps the entries of the trees a tool root read or wrote
// last, by hash. A commit into a directory of 10,000 tools reads that
// directory's tree two or three times (the new tree is built from it, the
// work tree is moved along the diff, the push lists the new objects), and
// decoding it from its pack costs about 7 ms each time; the next commit
// reads the tree this one wrote. Trees are immutable (the hash names the
// content), so an entry never goes stale. It is bounded in trees and in
// entries; the oldest tree goes first.
type treeCache struct {
	mu      sync.Mutex
	byHash  map[plumbing.Hash][]object.TreeEntry
	order   []plumbing.Hash
	entries int
}

// Bounds of a treeCache: a few trees, and their entries' memory (an entry
// is about 80 bytes with its name: 200,000 are about 16 MB).
const (
	treeCacheTrees   = 8
	treeCacheEntries = 200_000
)

// get returns the entries of tree h. IMPORTANT: they are the cache's own:
// the caller MUST NOT change them (appending is safe: the slice has no
// spare capacity). Copying them cost 3 ms a commit at 10,000 entries.
func (c *treeCache) get(h plumbing.Hash) ([]object.TreeEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ents, ok := c.byHash[h]
	return slices.Clip(ents), ok
}

// put keeps ents as tree h's entries. IMPORTANT: ents MUST be the decoded
// content of h, and the caller MUST NOT change it afterwards.
func (c *treeCache) put(h plumbing.Hash, ents []object.TreeEntry) {
	if len(ents) > treeCacheEntries {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byHash[h]; ok {
		return
	}
	if c.byHash == nil {
		c.byHash = map[plumbing.Hash][]object.TreeEntry{}
	}
	for len(c.order) > 0 && (len(c.order) >= treeCacheTrees || c.entries+len(ents) > treeCacheEntries) {
		old := c.order[0]
		c.order = c.order[1:]
		c.entries -= len(c.byHash[old])
		delete(c.byHash, old)
	}
	c.byHash[h] = ents
	c.order = append(c.order, h)
	c.entries += len(ents)
}
