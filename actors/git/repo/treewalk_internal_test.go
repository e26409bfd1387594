package repo

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"
)

// rawTree stores a tree of ents exactly in the order given, duplicates
// and all (writeTree would sort them): what a foreign commit may hold.
func rawTree(t *testing.T, s storer.EncodedObjectStorer, ents []object.TreeEntry) plumbing.Hash {
	t.Helper()
	var buf []byte
	for _, e := range ents {
		buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
		buf = append(append(append(append(buf, ' '), e.Name...), 0), e.Hash[:]...)
	}
	h, err := putObject(s, plumbing.TreeObject, buf)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// flatRef lists every file of tree h by path, reading each tree through
// a map filled in its order (the last entry of a name wins): the meaning
// the walks by name MUST keep.
func flatRef(t *testing.T, s storer.EncodedObjectStorer, h plumbing.Hash, prefix string, out map[string]entry) {
	t.Helper()
	ents, err := treeEntries(s, h)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]object.TreeEntry{}
	for _, e := range ents {
		m[e.Name] = e
	}
	for n, e := range m {
		if e.Mode == filemode.Dir {
			flatRef(t, s, e.Hash, prefix+n+"/", out)
		} else {
			out[prefix+n] = entry{e.Hash, e.Mode}
		}
	}
}

// randomTree stores a random tree (and subtrees) of names that collide
// as Git orders them ("a" and "a.ts", "a" both a file and a directory),
// sometimes unsorted and with duplicate names.
func randomTree(t *testing.T, s storer.EncodedObjectStorer, rng *rand.Rand, depth int) plumbing.Hash {
	names := []string{"a", "a.ts", "a-b", "b", "b.ts", "c", "a0"}
	var ents []object.TreeEntry
	for range rng.IntN(7) {
		e := object.TreeEntry{Name: names[rng.IntN(len(names))], Mode: filemode.Regular}
		if depth > 0 && rng.IntN(3) == 0 {
			e.Mode, e.Hash = filemode.Dir, randomTree(t, s, rng, depth-1)
		} else {
			content := []byte(strconv.Itoa(rng.IntN(3)))
			h, err := putObject(s, plumbing.BlobObject, content)
			if err != nil {
				t.Fatal(err)
			}
			e.Hash = h
		}
		ents = append(ents, e)
	}
	switch rng.IntN(3) {
	case 0:
		sort.Sort(object.TreeEntrySorter(ents)) // Git's order, duplicates kept
	case 1:
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	}
	return rawTree(t, s, ents)
}

// TestWalksByNameKeepTheMapsMeaning: diffTrees and updateTree, which walk
// each tree's entries ordered by name, give what the maps they replaced
// gave, on trees of every order, with duplicate names and with a
// directory whose name starts a file's.
func TestWalksByNameKeepTheMapsMeaning(t *testing.T) {
	t.Run("memory", func(t *testing.T) { walksByName(t, memory.NewStorage()) })
	t.Run("tool root's store", func(t *testing.T) {
		s := newStore(t.TempDir(), nil)
		walksByName(t, s)
		// The walks read the tree cache's own entries: none changed them.
		if len(s.trees.byHash) == 0 {
			t.Fatal("no tree was cached")
		}
		for h, ents := range s.trees.byHash {
			if want, err := decodeTree(s, h); err != nil || !reflect.DeepEqual(ents, want) {
				t.Fatalf("tree %s cached as %v, is %v (%v)", h, ents, want, err)
			}
		}
	})
}

func walksByName(t *testing.T, s storer.EncodedObjectStorer) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		a, b := randomTree(t, s, rng, 2), randomTree(t, s, rng, 2)
		fa, fb := map[string]entry{}, map[string]entry{}
		flatRef(t, s, a, "", fa)
		flatRef(t, s, b, "", fb)

		want := map[string][2]entry{}
		for p, e := range fa {
			if fb[p] != e {
				want[p] = [2]entry{e, fb[p]}
			}
		}
		for p, e := range fb {
			if _, ok := fa[p]; !ok {
				want[p] = [2]entry{{}, e}
			}
		}
		got := map[string][2]entry{}
		var order []string
		if err := diffTrees(s, a, b, func(p string, from, to entry) {
			got[p] = [2]entry{from, to}
			order = append(order, p)
		}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("tree pair %d: diff %v, want %v", i, got, want)
		}

		// Applying b's files over a (and deleting a's others) gives b's files.
		changes := map[string]entry{}
		for p := range fa {
			changes[p] = entry{}
		}
		for p, e := range fb {
			changes[p] = e
		}
		c, err := updateTree(s, a, changes)
		if err != nil {
			t.Fatal(err)
		}
		fc := map[string]entry{}
		flatRef(t, s, c, "", fc)
		if !reflect.DeepEqual(fc, fb) && !(len(fc) == 0 && len(fb) == 0) {
			t.Fatalf("tree pair %d: updated tree has %v, want %v (order of the diff %v)", i, fc, fb, order)
		}
	}
}

// TestByName: ordered by name, one entry a name (the last), and the same
// slice when it is so already.
func TestByName(t *testing.T) {
	e := func(n string, h byte) object.TreeEntry { return object.TreeEntry{Name: n, Hash: plumbing.Hash{h}} }
	sorted := []object.TreeEntry{e("a", 1), e("a.ts", 2), e("b", 3)}
	if got := byName(sorted); &got[0] != &sorted[0] {
		t.Error("an ordered slice was copied")
	}
	got := byName([]object.TreeEntry{e("b", 1), e("a.ts", 2), e("a", 3), e("b", 4), e("a", 5)})
	want := []object.TreeEntry{e("a", 5), e("a.ts", 2), e("b", 4)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("byName = %v, want %v", got, want)
	}
}
