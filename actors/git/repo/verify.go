package repo

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Problem is one damaged file or reference found by Verify.
type Problem struct {
	// Path is the damaged file (absolute), or the reference's name.
	Path string
	// Kind is "pack", "index", "loose", "ref" or "object".
	Kind string
	// Reason says what is wrong.
	Reason string
}

func (p Problem) String() string { return p.Kind + " " + p.Path + ": " + p.Reason }

// Verify checks the object store of the git directory gitDir (a tool
// root's .git or a bare upstream) and returns what is damaged:
//
//   - every pack has its index, and they agree: same object count, the
//     index names the pack's checksum, and the pack's content hashes to its
//     trailing checksum (a truncated, overwritten or half-written pack is
//     found here);
//   - every loose object inflates and hashes to its file name;
//   - deep: every object of every pack decodes (deltas resolved) and hashes
//     to the name its index gives it, and every reference reaches complete
//     commits and trees (connectivity, like git fsck; a walk stops at the commits listed in
//     the shallow file, whose parents were never fetched).
//
// A nil slice means the store is sound. The error is for a store that
// cannot be read at all (gitDir missing). Hydrate runs the shallow check
// at every start (see Repair); tests run the deep one. It holds the
// objects directory's readers' lock (see mergePacks): a local upstream's
// packs are not merged under it by a push.
func Verify(gitDir string, deep bool) (problems []Problem, err error) {
	unlock, err := readLockDir(context.Background(), filepath.Join(gitDir, "objects"))
	if err != nil {
		return nil, fmt.Errorf("repo: verifying %s: %w", gitDir, err)
	}
	defer unlock()
	return verify(gitDir, deep, nil)
}

// verify is Verify; a pack for which known returns true (its name, size
// and modification time were recorded when its content last hashed to its
// checksum) has its header, object count and trailing checksum checked,
// not its content hashed again (see verified.go).
func verify(gitDir string, deep bool, known func(name string, fi fs.FileInfo) bool) (problems []Problem, err error) {
	if _, err := os.Stat(filepath.Join(gitDir, "objects")); err != nil {
		return nil, fmt.Errorf("repo: verifying %s: %w", gitDir, err)
	}
	problems, err = verifyPacks(gitDir, deep, known)
	if err != nil {
		return nil, fmt.Errorf("repo: verifying %s: %w", gitDir, err)
	}
	problems = append(problems, verifyLoose(gitDir)...)
	if deep && len(problems) == 0 {
		problems = append(problems, verifyConnectivity(gitDir)...)
	}
	return problems, nil
}

// verifyPacks checks every pack of gitDir (see verifyPack), and reports
// the indexes without their pack.
func verifyPacks(gitDir string, deep bool, known func(name string, fi fs.FileInfo) bool) (problems []Problem, err error) {
	packDir := filepath.Join(gitDir, "objects", "pack")
	ents, err := os.ReadDir(packDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "pack-") {
			continue
		}
		base := filepath.Join(packDir, strings.TrimSuffix(strings.TrimSuffix(n, ".pack"), ".idx"))
		switch {
		case strings.HasSuffix(n, ".pack"):
			problems = append(problems, verifyPack(base, deep, known)...)
		case strings.HasSuffix(n, ".idx") && !names[strings.TrimSuffix(n, ".idx")+".pack"]:
			problems = append(problems, Problem{Path: base + ".idx", Kind: "index", Reason: "index without its pack"})
		}
	}
	return problems, nil
}

// verifyPack checks one pack (base is its path without extension).
func verifyPack(base string, deep bool, known func(string, fs.FileInfo) bool) []Problem {
	pack, idxPath := base+".pack", base+".idx"
	idx, err := readIdx(idxPath)
	if err != nil {
		return packProblem("index", idxPath, "unreadable index: %v", err)
	}
	name := strings.TrimPrefix(filepath.Base(base), "pack-")
	if sum := plumbing.Hash(idx.PackfileChecksum).String(); sum != name {
		return packProblem("index", idxPath, "the index is of pack %s, not %s", sum, name)
	}
	f, err := os.Open(pack)
	if err != nil {
		return packProblem("pack", pack, "%v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return packProblem("pack", pack, "%v", err)
	}
	hdr, err := readPackHeader(f, fi.Size(), idx)
	if err != nil {
		return packProblem("pack", pack, "%v", err)
	}
	trusted := !deep && known != nil && known(filepath.Base(pack), fi)
	trailer, err := packTrailer(f, fi.Size(), hdr, trusted)
	if err != nil {
		return packProblem("pack", pack, "%v", err)
	}
	if !bytes.Equal(trailer[:], idx.PackfileChecksum[:]) {
		return packProblem("pack", pack, "checksum %x differs from the one its index names", trailer)
	}
	if !deep {
		return nil
	}
	if err := verifyPackObjects(base, idx); err != nil {
		return packProblem("pack", pack, "%v", err)
	}
	return nil
}

// packProblem is the one problem of a pack or index file at path.
func packProblem(kind, path, format string, a ...any) []Problem {
	return []Problem{{Path: path, Kind: kind, Reason: fmt.Sprintf(format, a...)}}
}

// readPackHeader reads the header of the pack f (size bytes long) and
// checks its signature, its version and that it claims the objects its
// index idx lists.
func readPackHeader(f *os.File, size int64, idx *idxfile.MemoryIndex) (hdr [12]byte, err error) {
	if size < 12+20 {
		return hdr, fmt.Errorf("truncated: %d bytes", size)
	}
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return hdr, fmt.Errorf("reading the header: %v", err)
	}
	if !bytes.Equal(hdr[:4], []byte("PACK")) {
		return hdr, errors.New("not a pack (no PACK signature)")
	}
	if v := binary.BigEndian.Uint32(hdr[4:8]); v != 2 && v != 3 {
		return hdr, fmt.Errorf("unknown pack version %d", v)
	}
	count := binary.BigEndian.Uint32(hdr[8:12])
	if n, _ := idx.Count(); n != int64(count) {
		return hdr, fmt.Errorf("the pack claims %d objects while its index lists %d", count, n)
	}
	return hdr, nil
}

// packTrailer reads the trailing checksum of the pack f (size bytes long,
// read past its header hdr). Unless the pack is trusted (its content
// hashed to its checksum before), the content is hashed first and must
// match it.
func packTrailer(f *os.File, size int64, hdr [12]byte, trusted bool) (trailer [20]byte, err error) {
	if trusted {
		if _, err := f.ReadAt(trailer[:], size-20); err != nil {
			return trailer, fmt.Errorf("reading the checksum: %v", err)
		}
		return trailer, nil
	}
	h := sha1.New()
	h.Write(hdr[:])
	if _, err := io.CopyN(h, f, size-12-20); err != nil {
		return trailer, fmt.Errorf("reading: %v", err)
	}
	if _, err := io.ReadFull(f, trailer[:]); err != nil {
		return trailer, fmt.Errorf("reading the checksum: %v", err)
	}
	if !bytes.Equal(h.Sum(nil), trailer[:]) {
		return trailer, errors.New("content does not match its checksum (damaged or truncated)")
	}
	return trailer, nil
}

func readIdx(path string) (*idxfile.MemoryIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReaderSize(f, 64<<10)).Decode(idx); err != nil {
		return nil, err
	}
	return idx, nil
}

// verifyPackObjects decodes every object of a pack and checks its hash.
func verifyPackObjects(base string, idx *idxfile.MemoryIndex) (err error) {
	defer recoverInto(&err, nil, "verifying "+base+".pack")
	fsys := osfs.New(filepath.Dir(base))
	f, err := fsys.Open(filepath.Base(base) + ".pack")
	if err != nil {
		return err
	}
	p := packfile.NewPackfileWithCache(idx, nil, f, cache.NewObjectLRUDefault(), 0)
	defer p.Close()
	it, err := idx.EntriesByOffset()
	if err != nil {
		return err
	}
	defer it.Close()
	for {
		e, err := it.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		o, err := p.GetByOffset(int64(e.Offset))
		if err != nil {
			return fmt.Errorf("object %s at offset %d: %w", e.Hash, e.Offset, err)
		}
		if got, err := objectHash(o); err != nil || got != e.Hash {
			return fmt.Errorf("object %s at offset %d reads back as %s (%v)", e.Hash, e.Offset, got, err)
		}
	}
}

// objectHash recomputes the hash of an object from its content.
func objectHash(o plumbing.EncodedObject) (plumbing.Hash, error) {
	rd, err := o.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if int64(len(b)) != o.Size() {
		return plumbing.ZeroHash, fmt.Errorf("%d bytes, header says %d", len(b), o.Size())
	}
	return plumbing.ComputeHash(o.Type(), b), nil
}

// verifyLoose checks every loose object: it inflates, and hashes to its
// name.
func verifyLoose(gitDir string) []Problem {
	var out []Problem
	objDir := filepath.Join(gitDir, "objects")
	fans, _ := os.ReadDir(objDir)
	for _, fan := range fans {
		if !fan.IsDir() || len(fan.Name()) != 2 || !plumbing.IsHash(fan.Name()+strings.Repeat("0", 38)) {
			continue
		}
		files, _ := os.ReadDir(filepath.Join(objDir, fan.Name()))
		for _, f := range files {
			name := fan.Name() + f.Name()
			if len(name) != 40 || !plumbing.IsHash(name) {
				continue // a temporary file: cleanStale's business
			}
			p := filepath.Join(objDir, fan.Name(), f.Name())
			if err := verifyLooseObject(p, plumbing.NewHash(name)); err != nil {
				out = append(out, Problem{Path: p, Kind: "loose", Reason: err.Error()})
			}
		}
	}
	return out
}

func verifyLooseObject(path string, want plumbing.Hash) (err error) {
	defer recoverInto(&err, nil, "reading "+path)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := objfile.NewReader(f)
	if err != nil {
		return fmt.Errorf("not a zlib stream: %w", err)
	}
	defer r.Close()
	t, size, err := r.Header()
	if err != nil {
		return fmt.Errorf("bad header: %w", err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("truncated: %w", err)
	}
	if int64(len(b)) != size {
		return fmt.Errorf("%d bytes, header says %d", len(b), size)
	}
	if got := plumbing.ComputeHash(t, b); got != want {
		return fmt.Errorf("content hashes to %s", got)
	}
	return nil
}

// verifyConnectivity walks every reference (loose and packed) down to
// every commit, tree and blob it reaches, reading each.
func verifyConnectivity(gitDir string) (out []Problem) {
	defer func() {
		if v := recover(); v != nil {
			out = append(out, Problem{Path: gitDir, Kind: "object", Reason: fmt.Sprintf("panic while reading objects: %v\n%s", v, debug.Stack())})
		}
	}()
	sto := filesystem.NewStorage(osfs.New(gitDir), cache.NewObjectLRUDefault())
	defer sto.Close()
	refs, err := hashRefs(sto)
	if err != nil {
		return []Problem{{Path: gitDir, Kind: "ref", Reason: err.Error()}}
	}
	w := &connectivityWalk{sto: sto, seen: map[plumbing.Hash]bool{}, shallow: readShallow(gitDir)}
	for _, n := range sortedKeys(refs) {
		out = append(out, w.history(n, refs[n])...)
	}
	return out
}

// hashRefs lists the references of sto that name an object (not the
// symbolic ones), by name.
func hashRefs(sto *filesystem.Storage) (map[string]plumbing.Hash, error) {
	refs := map[string]plumbing.Hash{}
	it, err := sto.IterReferences()
	if err != nil {
		return nil, err
	}
	_ = it.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			refs[ref.Name().String()] = ref.Hash()
		}
		return nil
	})
	return refs, nil
}

// connectivityWalk reads every object reachable from the references,
// each once.
type connectivityWalk struct {
	sto     *filesystem.Storage
	seen    map[plumbing.Hash]bool
	shallow map[plumbing.Hash]bool // their parents were never fetched
}

// history walks the first-parent history from head (the reference name),
// reading each commit's tree and checking its other parents exist; it
// stops at the first commit it cannot read or already walked.
func (w *connectivityWalk) history(name string, head plumbing.Hash) (out []Problem) {
	for h := head; !h.IsZero() && !w.seen[h]; {
		w.seen[h] = true
		c, err := object.GetCommit(w.sto, h)
		if err == nil {
			err = w.tree(c.TreeHash)
		}
		if err != nil {
			return append(out, Problem{Path: name, Kind: "ref", Reason: fmt.Sprintf("commit %s: %v", h, err)})
		}
		if len(c.ParentHashes) == 0 || w.shallow[h] {
			break
		}
		for _, p := range c.ParentHashes[1:] {
			if _, err := object.GetCommit(w.sto, p); err != nil {
				out = append(out, Problem{Path: name, Kind: "ref", Reason: fmt.Sprintf("commit %s: %v", p, err)})
			}
		}
		h = c.ParentHashes[0]
	}
	return out
}

// tree reads the tree h and, recursively, every subtree and blob in it.
func (w *connectivityWalk) tree(h plumbing.Hash) error {
	if w.seen[h] {
		return nil
	}
	w.seen[h] = true
	t, err := object.GetTree(w.sto, h)
	if err != nil {
		return fmt.Errorf("tree %s: %w", h, err)
	}
	for _, e := range t.Entries {
		switch e.Mode {
		case filemode.Dir:
			err = w.tree(e.Hash)
		case filemode.Submodule:
		default:
			err = w.blob(e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// blob reads the blob of the tree entry e and checks its content hashes
// to its name.
func (w *connectivityWalk) blob(e object.TreeEntry) error {
	if w.seen[e.Hash] {
		return nil
	}
	w.seen[e.Hash] = true
	o, err := w.sto.EncodedObject(plumbing.BlobObject, e.Hash)
	if err != nil {
		return fmt.Errorf("blob %s (%s): %w", e.Hash, e.Name, err)
	}
	if got, err := objectHash(o); err != nil || got != e.Hash {
		return fmt.Errorf("blob %s (%s) reads back as %s (%v)", e.Hash, e.Name, got, err)
	}
	return nil
}
