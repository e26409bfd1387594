package repo

import (
	"cmp"
	"slices"
	"sort"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// The functions that read a tree by name (diffSub, updateSubtree,
// newObjects) walk its entries ordered by name rather than building a map
// of them: a commit into a directory of 10,000 tools read that directory
// three times, and each map cost about 2 ms.

// byName returns ents ordered by name with one entry per name, the last
// one of ents (as a map filled from ents keeps it). It returns ents itself
// when it is so already: every tree in which no directory's name is the
// start of a file's ("a" and "a.ts": Git orders a directory as if its
// name ended in "/"). IMPORTANT: the result MAY be ents, which the caller
// MUST NOT modify (the tree cache holds it).
func byName(ents []object.TreeEntry) []object.TreeEntry {
	if strictlyByName(ents) {
		return ents
	}
	out := slices.Clone(ents)
	slices.SortStableFunc(out, func(a, b object.TreeEntry) int { return cmp.Compare(a.Name, b.Name) })
	n := 0
	for i := range out {
		if i+1 < len(out) && out[i+1].Name == out[i].Name {
			continue // a later entry of the same name wins
		}
		out[n] = out[i]
		n++
	}
	return out[:n]
}

func strictlyByName(ents []object.TreeEntry) bool {
	for i := 1; i < len(ents); i++ {
		if ents[i-1].Name >= ents[i].Name {
			return false
		}
	}
	return true
}

// findName returns the entry named name of ents (ordered by byName), and
// whether there is one.
func findName(ents []object.TreeEntry, name string) (object.TreeEntry, bool) {
	i := sort.Search(len(ents), func(i int) bool { return ents[i].Name >= name })
	if i < len(ents) && ents[i].Name == name {
		return ents[i], true
	}
	return object.TreeEntry{}, false
}

// mergeNames calls fn for each name of a or b (both ordered by byName), in
// order, with the entry of each side that has it.
func mergeNames(a, b []object.TreeEntry, fn func(name string, x object.TreeEntry, inA bool, y object.TreeEntry, inB bool) error) error {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].Name < b[j].Name:
			if err := fn(a[i].Name, a[i], true, object.TreeEntry{}, false); err != nil {
				return err
			}
			i++
		case i == len(a) || b[j].Name < a[i].Name:
			if err := fn(b[j].Name, object.TreeEntry{}, false, b[j], true); err != nil {
				return err
			}
			j++
		default:
			if err := fn(a[i].Name, a[i], true, b[j], true); err != nil {
				return err
			}
			i, j = i+1, j+1
		}
	}
	return nil
}

// treeEdit is a tree's entries (base, ordered by byName) with changes
// made over them, by name: an entry set, or removed (nil).
type treeEdit struct {
	base    []object.TreeEntry
	changed map[string]*object.TreeEntry
}

// get returns the entry of name as edited (the zero entry when there is
// none).
func (t *treeEdit) get(name string) object.TreeEntry {
	if e, ok := t.changed[name]; ok {
		if e == nil {
			return object.TreeEntry{}
		}
		return *e
	}
	e, _ := findName(t.base, name)
	return e
}

func (t *treeEdit) put(e object.TreeEntry) { t.changed[e.Name] = &e }

func (t *treeEdit) remove(name string) { t.changed[name] = nil }

// entries returns the edited entries, ordered by name.
func (t *treeEdit) entries() []object.TreeEntry {
	set := make([]object.TreeEntry, 0, len(t.changed))
	for _, e := range t.changed {
		if e != nil {
			set = append(set, *e)
		}
	}
	slices.SortFunc(set, func(a, b object.TreeEntry) int { return cmp.Compare(a.Name, b.Name) })
	out := make([]object.TreeEntry, 0, len(t.base)+len(set))
	_ = mergeNames(t.base, set, func(name string, x object.TreeEntry, inBase bool, y object.TreeEntry, isSet bool) error {
		switch _, changed := t.changed[name]; {
		case isSet:
			out = append(out, y)
		case !changed:
			out = append(out, x)
		}
		return nil
	})
	return out
}
