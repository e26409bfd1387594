package repo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-billy/v5"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// entry is one file of a tree: its blob and mode. The zero entry means
// "absent" (in a change: deleted).
type entry struct {
	hash plumbing.Hash
	mode filemode.FileMode
}

func (e entry) absent() bool { return e.hash.IsZero() }

// emptyTree is the hash of the empty tree object.
var emptyTree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

// putObject stores an object unless it is already there.
func putObject(s storer.EncodedObjectStorer, t plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(t, content)
	if s.HasEncodedObject(h) == nil {
		return h, nil
	}
	o := s.NewEncodedObject()
	o.SetType(t)
	o.SetSize(int64(len(content)))
	w, err := o.Writer()
	if err != nil {
		return h, err
	}
	if _, err := w.Write(content); err != nil {
		return h, err
	}
	if err := w.Close(); err != nil {
		return h, err
	}
	return s.SetEncodedObject(o)
}

// readBlob returns a blob's content.
func readBlob(s storer.EncodedObjectStorer, h plumbing.Hash) ([]byte, error) {
	o, err := s.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, err
	}
	return readObject(o)
}

// readObject reads an object's content.
func readObject(o plumbing.EncodedObject) ([]byte, error) {
	rd, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// treeEntries returns a tree's entries; the zero hash and the empty tree
// have none. A tool root's store answers from its tree cache when it can:
// IMPORTANT: the caller MUST NOT change the entries.
func treeEntries(s storer.EncodedObjectStorer, h plumbing.Hash) ([]object.TreeEntry, error) {
	if h.IsZero() || h == emptyTree {
		return nil, nil
	}
	c, cached := s.(*store)
	if cached {
		if ents, ok := c.trees.get(h); ok {
			return ents, nil
		}
	}
	ents, err := decodeTree(s, h)
	if err == nil && cached {
		c.trees.put(h, slices.Clone(ents))
	}
	return ents, err
}

// decodeTree reads and decodes tree h from s (no cache: what an integrity
// check of the objects calls).
func decodeTree(s storer.EncodedObjectStorer, h plumbing.Hash) ([]object.TreeEntry, error) {
	t, err := object.GetTree(s, h)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	return t.Entries, nil
}

// writeTree stores a tree made of ents (any order).
func writeTree(s storer.EncodedObjectStorer, ents []object.TreeEntry) (plumbing.Hash, error) {
	sort.Sort(object.TreeEntrySorter(ents))
	n := 0
	for _, e := range ents {
		n += 8 + len(e.Name) + len(e.Hash)
	}
	buf := make([]byte, 0, n)
	for _, e := range ents {
		buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
		buf = append(buf, ' ')
		buf = append(buf, e.Name...)
		buf = append(buf, 0)
		buf = append(buf, e.Hash[:]...)
	}
	h, err := putObject(s, plumbing.TreeObject, buf)
	if c, ok := s.(*store); ok && err == nil && len(ents) > 0 {
		c.trees.put(h, slices.Clone(ents))
	}
	return h, err
}

// updateTree returns the tree root with changes applied (path -> entry; an
// absent entry deletes the path). Only the trees along changed paths are
// read and written. Empty directories disappear; the root may become the
// empty tree.
func updateTree(s storer.EncodedObjectStorer, root plumbing.Hash, changes map[string]entry) (plumbing.Hash, error) {
	h, err := updateSubtree(s, root, changes)
	if err != nil {
		return h, err
	}
	if h.IsZero() {
		return writeTree(s, nil)
	}
	return h, nil
}

func updateSubtree(s storer.EncodedObjectStorer, root plumbing.Hash, changes map[string]entry) (plumbing.Hash, error) {
	if len(changes) == 0 {
		return root, nil
	}
	ents, err := treeEntries(s, root)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	t := &treeEdit{base: byName(ents), changed: map[string]*object.TreeEntry{}}
	files, dirs := splitChanges(changes)
	for name, e := range files {
		switch {
		case !e.absent():
			t.put(object.TreeEntry{Name: name, Mode: e.mode, Hash: e.hash})
		case t.get(name).Mode != filemode.Dir: // a file's deletion never removes a directory
			t.remove(name)
		}
	}
	for name, sub := range dirs {
		if err := updateDir(s, t, name, sub); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	out := t.entries()
	if len(out) == 0 {
		return plumbing.ZeroHash, nil
	}
	return writeTree(s, out)
}

// splitChanges groups changes by their first path element: the entries
// of this tree's own files, and, for each subdirectory, the changes
// relative to it.
func splitChanges(changes map[string]entry) (files map[string]entry, dirs map[string]map[string]entry) {
	files, dirs = map[string]entry{}, map[string]map[string]entry{}
	for p, e := range changes {
		name, rest, nested := strings.Cut(p, "/")
		if !nested {
			files[name] = e
			continue
		}
		if dirs[name] == nil {
			dirs[name] = map[string]entry{}
		}
		dirs[name][rest] = e
	}
	return files, dirs
}

// updateDir applies changes (relative to the directory name) to the
// entry name of t, writing the new subtree; a directory left empty is
// removed. A file at name is replaced by the directory.
func updateDir(s storer.EncodedObjectStorer, t *treeEdit, name string, changes map[string]entry) error {
	base := plumbing.ZeroHash
	if cur := t.get(name); cur.Mode == filemode.Dir {
		base = cur.Hash
	}
	h, err := updateSubtree(s, base, changes)
	if err != nil {
		return err
	}
	if !h.IsZero() && h != emptyTree {
		t.put(object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	} else if t.get(name).Mode == filemode.Dir {
		t.remove(name)
	}
	return nil
}

// diffTrees calls fn for every file path whose entry differs between trees
// a and b (either may be zero = empty), skipping identical subtrees.
func diffTrees(s storer.EncodedObjectStorer, a, b plumbing.Hash, fn func(p string, from, to entry)) error {
	return diffSub(s, a, b, "", fn)
}

func diffSub(s storer.EncodedObjectStorer, a, b plumbing.Hash, prefix string, fn func(p string, from, to entry)) error {
	if a == b {
		return nil
	}
	ea, err := treeEntries(s, a)
	if err != nil {
		return err
	}
	eb, err := treeEntries(s, b)
	if err != nil {
		return err
	}
	return mergeNames(byName(ea), byName(eb), func(n string, x object.TreeEntry, inA bool, y object.TreeEntry, inB bool) error {
		if inA && inB && x.Hash == y.Hash && x.Mode == y.Mode {
			return nil
		}
		p := prefix + n
		xDir, subA, from := diffSide(x, inA)
		yDir, subB, to := diffSide(y, inB)
		if from != to {
			fn(p, from, to)
		}
		if xDir || yDir {
			return diffSub(s, subA, subB, p+"/", fn)
		}
		return nil
	})
}

// diffSide reads one side of a diffed name: the tree entry e, when present
// on that side, is either a directory (whose subtree sub the diff descends
// into) or a file.
func diffSide(e object.TreeEntry, present bool) (dir bool, sub plumbing.Hash, file entry) {
	if !present {
		return false, plumbing.ZeroHash, entry{}
	}
	if e.Mode == filemode.Dir {
		return true, e.Hash, entry{}
	}
	return false, plumbing.ZeroHash, entry{e.Hash, e.Mode}
}

// flatten lists every file of a tree.
func flatten(s storer.EncodedObjectStorer, tree plumbing.Hash) (map[string]entry, error) {
	files := map[string]entry{}
	err := diffTrees(s, plumbing.ZeroHash, tree, func(p string, _, to entry) { files[p] = to })
	return files, err
}

// newObjects lists the objects of tree b that are not in tree a (the
// parent's tree, which the receiver has): the trees along changed paths
// and the new blobs.
func newObjects(s storer.EncodedObjectStorer, a, b plumbing.Hash, out map[plumbing.Hash]bool) error {
	if a == b || b.IsZero() {
		return nil
	}
	out[b] = true
	ea, err := treeEntries(s, a)
	if err != nil {
		return err
	}
	eb, err := treeEntries(s, b)
	if err != nil {
		return err
	}
	ea = byName(ea)
	for _, y := range eb {
		x, ok := findName(ea, y.Name)
		if ok && x.Hash == y.Hash {
			continue
		}
		switch y.Mode {
		case filemode.Dir:
			base := plumbing.ZeroHash
			if ok && x.Mode == filemode.Dir {
				base = x.Hash
			}
			if err := newObjects(s, base, y.Hash, out); err != nil {
				return err
			}
		case filemode.Submodule:
		default:
			out[y.Hash] = true
		}
	}
	return nil
}

// unpack stores the objects of a packfile stream as one pack and its
// index (see writePack), whether fetched into a tool root or received by a
// local upstream: creating files is the expensive part of storing a few
// objects (git's own receive.unpackLimit explodes a push of fewer than 100
// objects into one file each), and a pack is renamed into place complete,
// so a commit present in the store always has its whole tree even if the
// process is killed midway. A tool root merges its packs as they pile up
// (Repo.repack), an upstream at the end of a push (mergeUpstreamPacks).
func unpack(s storer.PackfileWriter, r io.Reader) error {
	var hdr [12]byte
	n, err := io.ReadFull(r, hdr[:])
	if n == 0 && (err == io.EOF || err == io.ErrUnexpectedEOF) {
		return nil // no packfile: nothing to store
	}
	if err != nil {
		return fmt.Errorf("reading pack header: %w", err)
	}
	if !bytes.Equal(hdr[:4], []byte("PACK")) {
		return errors.New("received data is not a packfile")
	}
	if binary.BigEndian.Uint32(hdr[8:12]) == 0 {
		_, err := io.Copy(io.Discard, r)
		return err
	}
	return writePack(s, io.MultiReader(bytes.NewReader(hdr[:]), r))
}

// writePack stores the pack stream full as one pack and its index, in
// temporary files renamed into place when complete.
func writePack(s storer.PackfileWriter, full io.Reader) error {
	before := packTemps(s)
	err := packfile.WritePackfileToObjectStorage(s, full)
	if errors.Is(err, packfile.ErrEmptyPackfile) {
		return nil
	}
	if err != nil {
		// go-git leaves its tmp_pack_ file when the pack is
		// truncated or malformed (a pusher that died mid-push):
		// remove it now rather than at the next cleanStale.
		removeNewTemps(s, before)
	}
	return err
}

// removeNewTemps removes the files of packTemps(s) not in before: what a
// failed pack write left. The caller holds the repository's lock: they
// are this write's.
func removeNewTemps(s any, before map[string]string) {
	for name, path := range packTemps(s) {
		if _, old := before[name]; !old {
			_ = os.Remove(path)
		}
	}
}

// packTemps lists go-git's temporary pack files in the objects/pack
// directory of a filesystem storage, and the indexes without their pack
// (go-git writes an index in place before renaming its pack): name ->
// path; nil for other stores.
func packTemps(s any) map[string]string {
	fsys, ok := s.(interface{ Filesystem() billy.Filesystem })
	if !ok {
		return nil
	}
	dir := filepath.Join(fsys.Filesystem().Root(), "objects", "pack")
	ents, _ := os.ReadDir(dir)
	names := make(map[string]bool, len(ents))
	for _, e := range ents {
		names[e.Name()] = true
	}
	out := map[string]string{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "tmp_pack_") || orphanIndex(e.Name(), names) {
			out[e.Name()] = filepath.Join(dir, e.Name())
		}
	}
	return out
}
