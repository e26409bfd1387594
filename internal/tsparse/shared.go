package tsparse

import (
	"bytes"
	"hash/maphash"
	"sync"
)

// Shared keeps the trees of the latest sources parsed through it, so that
// one new source's consumers parse it once between them: on exec, the
// approval gate's rating (check) and the executor's parameter check
// (toolmeta); on check_tool and write_file, the check and the registry's
// metadata.
const (
	sharedEntries   = 16       // trees kept, the oldest replaced first
	maxSharedSource = 16 << 10 // larger sources are parsed but not kept (at most about 4 MB kept)
)

type sharedEntry struct {
	key  uint64
	tree *Tree
}

// sharedCache is a ring of the latest trees, keyed by a hash of the source
// (an entry is used only if its source is equal, byte for byte).
var sharedCache struct {
	mu   sync.Mutex
	seed maphash.Seed
	ents [sharedEntries]sharedEntry
	next int
}

func init() { sharedCache.seed = maphash.MakeSeed() }

// Shared returns the tree of src: the one kept from an earlier Shared call
// with the same content, else a new parse, which it keeps (a copy of src:
// the caller may reuse src). It returns nil as Parse does.
//
// IMPORTANT: the tree is shared with every other caller of Shared: it MUST
// NOT be modified.
func Shared(src []byte) *Tree {
	key := maphash.Bytes(sharedCache.seed, src)
	if t := sharedLookup(key, src); t != nil {
		return t
	}
	if len(src) > maxSharedSource {
		return Parse(src)
	}
	t := Parse(bytes.Clone(src))
	if t != nil {
		sharedKeep(key, t)
	}
	return t
}

func sharedLookup(key uint64, src []byte) *Tree {
	sharedCache.mu.Lock()
	defer sharedCache.mu.Unlock()
	for _, e := range sharedCache.ents {
		if e.tree != nil && e.key == key && bytes.Equal(e.tree.Src, src) {
			return e.tree
		}
	}
	return nil
}

func sharedKeep(key uint64, t *Tree) {
	sharedCache.mu.Lock()
	defer sharedCache.mu.Unlock()
	sharedCache.ents[sharedCache.next] = sharedEntry{key: key, tree: t}
	sharedCache.next = (sharedCache.next + 1) % sharedEntries
}
