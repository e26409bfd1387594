package repo

import (
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestTreeCacheAppendIsSafe: a caller appending to the entries it got
// does not change what the next caller gets.
func TestTreeCacheAppendIsSafe(t *testing.T) {
	var c treeCache
	h := plumbing.NewHash("0123456789012345678901234567890123456789")
	ents := make([]object.TreeEntry, 1, 4)
	ents[0] = object.TreeEntry{Name: "a.ts", Mode: filemode.Regular}
	c.put(h, ents)
	got, ok := c.get(h)
	if !ok || len(got) != 1 {
		t.Fatalf("get = %v, %v", got, ok)
	}
	_ = append(got, object.TreeEntry{Name: "b.ts"})
	if again, _ := c.get(h); len(again) != 1 || ents[:2][1].Name != "" {
		t.Fatalf("an append changed the cached entries: %v", ents[:2])
	}
}

// TestTreeCacheBounds: the cache keeps at most treeCacheTrees trees and
// treeCacheEntries entries, dropping the oldest first.
func TestTreeCacheBounds(t *testing.T) {
	var c treeCache
	hash := func(i int) plumbing.Hash { return plumbing.ComputeHash(plumbing.TreeObject, []byte(fmt.Sprint(i))) }
	for i := range treeCacheTrees + 3 {
		c.put(hash(i), make([]object.TreeEntry, 10))
	}
	if len(c.byHash) != treeCacheTrees {
		t.Fatalf("%d trees kept, want %d", len(c.byHash), treeCacheTrees)
	}
	if _, ok := c.get(hash(0)); ok {
		t.Fatal("the oldest tree is still kept")
	}
	big := hash(1000)
	c.put(big, make([]object.TreeEntry, treeCacheEntries-5))
	if c.entries > treeCacheEntries {
		t.Fatalf("%d entries kept, bound %d", c.entries, treeCacheEntries)
	}
	if _, ok := c.get(big); !ok {
		t.Fatal("the newest tree was dropped")
	}
	c.put(hash(1001), make([]object.TreeEntry, treeCacheEntries+1))
	if _, ok := c.get(hash(1001)); ok {
		t.Fatal("a tree over the entry bound was kept")
	}
}
