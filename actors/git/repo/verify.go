package repo

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
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
// at every start (see Repair); tests run the deep one.
func Verify(gitDir string, deep bool) (problems []Problem, err error) {
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
	packDir := filepath.Join(gitDir, "objects", "pack")
	ents, err := os.ReadDir(packDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("repo: verifying %s: %w", gitDir, err)
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
	problems = append(problems, verifyLoose(gitDir)...)
	if deep && len(problems) == 0 {
		problems = append(problems, verifyConnectivity(gitDir)...)
	}
	return problems, nil
}

// verifyPack checks one pack (base is its path without extension).
func verifyPack(base string, deep bool, known func(string, fs.FileInfo) bool) []Problem {
	pack, idxPath := base+".pack", base+".idx"
	bad := func(kind, path, format string, a ...any) []Problem {
		return []Problem{{Path: path, Kind: kind, Reason: fmt.Sprintf(format, a...)}}
	}
	idx, err := readIdx(idxPath)
	if err != nil {
		return bad("index", idxPath, "unreadable index: %v", err)
	}
	name := strings.TrimPrefix(filepath.Base(base), "pack-")
	if sum := plumbing.Hash(idx.PackfileChecksum).String(); sum != name {
		return bad("index", idxPath, "the index is of pack %s, not %s", sum, name)
	}
	f, err := os.Open(pack)
	if err != nil {
		return bad("pack", pack, "%v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return bad("pack", pack, "%v", err)
	}
	if fi.Size() < 12+20 {
		return bad("pack", pack, "truncated: %d bytes", fi.Size())
	}
	var hdr [12]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return bad("pack", pack, "reading the header: %v", err)
	}
	if !bytes.Equal(hdr[:4], []byte("PACK")) {
		return bad("pack", pack, "not a pack (no PACK signature)")
	}
	if v := binary.BigEndian.Uint32(hdr[4:8]); v != 2 && v != 3 {
		return bad("pack", pack, "unknown pack version %d", v)
	}
	count := binary.BigEndian.Uint32(hdr[8:12])
	if n, _ := idx.Count(); n != int64(count) {
		return bad("pack", pack, "the pack claims %d objects while its index lists %d", count, n)
	}
	var trailer [20]byte
	if !deep && known != nil && known(filepath.Base(pack), fi) {
		if _, err := f.ReadAt(trailer[:], fi.Size()-20); err != nil {
			return bad("pack", pack, "reading the checksum: %v", err)
		}
	} else {
		h := sha1.New()
		h.Write(hdr[:])
		if _, err := io.CopyN(h, f, fi.Size()-12-20); err != nil {
			return bad("pack", pack, "reading: %v", err)
		}
		if _, err := io.ReadFull(f, trailer[:]); err != nil {
			return bad("pack", pack, "reading the checksum: %v", err)
		}
		if !bytes.Equal(h.Sum(nil), trailer[:]) {
			return bad("pack", pack, "content does not match its checksum (damaged or truncated)")
		}
	}
	if !bytes.Equal(trailer[:], idx.PackfileChecksum[:]) {
		return bad("pack", pack, "checksum %x differs from the one its index names", trailer)
	}
	if !deep {
		return nil
	}
	if err := verifyPackObjects(base, idx); err != nil {
		return bad("pack", pack, "%v", err)
	}
	return nil
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
	refs := map[string]plumbing.Hash{}
	it, err := sto.IterReferences()
	if err != nil {
		return []Problem{{Path: gitDir, Kind: "ref", Reason: err.Error()}}
	}
	_ = it.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			refs[ref.Name().String()] = ref.Hash()
		}
		return nil
	})
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	seen := map[plumbing.Hash]bool{}
	shallow := readShallow(gitDir) // their parents were never fetched
	var walkTree func(h plumbing.Hash) error
	walkTree = func(h plumbing.Hash) error {
		if seen[h] {
			return nil
		}
		seen[h] = true
		t, err := object.GetTree(sto, h)
		if err != nil {
			return fmt.Errorf("tree %s: %w", h, err)
		}
		for _, e := range t.Entries {
			switch e.Mode {
			case filemode.Dir:
				if err := walkTree(e.Hash); err != nil {
					return err
				}
			case filemode.Submodule:
			default:
				if seen[e.Hash] {
					continue
				}
				seen[e.Hash] = true
				o, err := sto.EncodedObject(plumbing.BlobObject, e.Hash)
				if err != nil {
					return fmt.Errorf("blob %s (%s): %w", e.Hash, e.Name, err)
				}
				if got, err := objectHash(o); err != nil || got != e.Hash {
					return fmt.Errorf("blob %s (%s) reads back as %s (%v)", e.Hash, e.Name, got, err)
				}
			}
		}
		return nil
	}
	for _, n := range names {
		for h := refs[n]; !h.IsZero() && !seen[h]; {
			seen[h] = true
			c, err := object.GetCommit(sto, h)
			if err != nil {
				out = append(out, Problem{Path: n, Kind: "ref", Reason: fmt.Sprintf("commit %s: %v", h, err)})
				break
			}
			if err := walkTree(c.TreeHash); err != nil {
				out = append(out, Problem{Path: n, Kind: "ref", Reason: fmt.Sprintf("commit %s: %v", h, err)})
				break
			}
			if len(c.ParentHashes) == 0 || shallow[h] {
				break
			}
			for _, p := range c.ParentHashes[1:] {
				if _, err := object.GetCommit(sto, p); err != nil {
					out = append(out, Problem{Path: n, Kind: "ref", Reason: fmt.Sprintf("commit %s: %v", p, err)})
				}
			}
			h = c.ParentHashes[0]
		}
	}
	return out
}
