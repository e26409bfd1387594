package repo

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Repair of a damaged tool root.
//
// At every Hydrate (under the tool root's lock) the object store is
// checked with Verify (shallow: every pack against its index and its
// checksum, every loose object against its name; a pack hashed sound at an
// earlier start and unchanged since, by size and time, is not hashed again:
// see verified.go). What is damaged is
// repaired without losing local work:
//
//  1. The objects still readable in a damaged pack are salvaged (the pack
//     is read object by object up to the damage; each object is stored
//     under the hash of its content) into a new pack. The damaged files are
//     moved to .git/corrupt/<time>/ (kept for inspection, never read
//     again). A damaged loose object is moved there too.
//  2. The upstream is fetched in full (not only what is new), which brings
//     back every object the upstream has.
//  3. The refs are read again: a ref that points at a missing commit, or
//     whose file is garbage, reads as absent. Local commits whose objects
//     are all readable are replayed and pushed as after a crash. Local
//     commits that cannot be read any more are dropped, but their files
//     are in the working tree: every working file that differs from the
//     upstream is kept as it is (never overwritten by the upstream's
//     version), and recovered under its own commit when a write's intent
//     names it (recover.go, intent.go), like a change a crash left
//     uncommitted.
//
// The same repair runs when an update fails because an object is missing
// or unreadable although Verify found nothing (a pack deleted by a
// process that did not take the lock).

// corruptDir is where damaged files are moved, under .git.
const corruptDir = "corrupt"

// checkStore verifies the object store and repairs what is damaged (steps
// 1 and the quarantine above). It reports whether anything was.
func (r *Repo) checkStore() (bool, error) {
	problems, err := verifyStore(r.gitDir)
	if err != nil {
		return false, err
	}
	if len(problems) == 0 {
		return false, nil
	}
	quarantine := filepath.Join(r.gitDir, corruptDir, r.opts.Now().UTC().Format("20060102T150405.000000000"))
	if err := os.MkdirAll(quarantine, 0o755); err != nil {
		return false, fmt.Errorf("repo: repairing %s: %w", r.gitDir, err)
	}
	moved := map[string]bool{}
	move := func(p string) {
		if moved[p] {
			return
		}
		moved[p] = true
		if err := os.Rename(p, filepath.Join(quarantine, filepath.Base(p))); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.log.Warn("git: could not move a damaged file aside; removing it", slog.String("file", p), slog.String("err", err.Error()))
			_ = os.Remove(p)
		}
	}
	salvaged := 0
	for _, p := range problems {
		r.log.Warn("git: damaged file in the tool root's repository", slog.String("kind", p.Kind), slog.String("file", p.Path), slog.String("problem", p.Reason))
		switch p.Kind {
		case "pack", "index":
			base := strings.TrimSuffix(strings.TrimSuffix(p.Path, ".pack"), ".idx")
			if _, err := os.Stat(base + ".pack"); err == nil && !moved[base+".pack"] {
				n, err := r.salvagePack(base + ".pack")
				salvaged += n
				if err != nil {
					r.log.Warn("git: salvaged the objects before the damage", slog.String("pack", base+".pack"), slog.Int("objects", n), slog.String("stopped at", err.Error()))
				}
			}
			for _, ext := range []string{".pack", ".idx", ".rev"} {
				move(base + ext)
			}
		default:
			move(p.Path)
		}
	}
	if err := r.sto.reopen(r.gitDir); err != nil {
		r.log.Warn("git: closing the object store", slog.String("err", err.Error()))
	}
	if err := r.sto.flush(); err != nil {
		return true, fmt.Errorf("repo: writing the %d objects salvaged from damaged packs: %w", salvaged, err)
	}
	r.log.Warn("git: moved damaged files aside; repairing from the upstream",
		slog.String("moved to", quarantine), slog.Int("files", len(moved)), slog.Int("objects salvaged", salvaged))
	return true, nil
}

// salvagePack reads a pack object by object, without its index, and keeps
// (in memory, until flush) every object it can rebuild; it stops at the
// first damaged object. Each object is stored under the hash of its
// content, so a damaged one can only add an object nothing refers to.
func (r *Repo) salvagePack(path string) (n int, err error) {
	defer recoverInto(&err, r.log, "salvaging "+path)
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := packfile.NewScanner(f)
	_, count, err := sc.Header()
	if err != nil {
		return 0, err
	}
	type obj struct {
		t       plumbing.ObjectType
		content []byte
	}
	byOffset := map[int64]obj{}
	byHash := map[plumbing.Hash]obj{}
	for i := uint32(0); i < count; i++ {
		h, err := sc.NextObjectHeader()
		if err != nil {
			return n, err
		}
		var buf bytes.Buffer
		if _, _, err := sc.NextObject(&buf); err != nil {
			return n, err
		}
		o := obj{t: h.Type, content: buf.Bytes()}
		switch h.Type {
		case plumbing.OFSDeltaObject, plumbing.REFDeltaObject:
			var base obj
			var ok bool
			if h.Type == plumbing.OFSDeltaObject {
				base, ok = byOffset[h.OffsetReference]
			} else if base, ok = byHash[h.Reference]; !ok {
				if bo, err := r.sto.EncodedObject(plumbing.AnyObject, h.Reference); err == nil {
					if b, err := readAll(bo); err == nil {
						base, ok = obj{t: bo.Type(), content: b}, true
					}
				}
			}
			if !ok {
				continue // its base is lost: so is it
			}
			content, err := packfile.PatchDelta(base.content, o.content)
			if err != nil {
				continue
			}
			o = obj{t: base.t, content: content}
		}
		hash := plumbing.ComputeHash(o.t, o.content)
		byOffset[h.Offset], byHash[hash] = o, o
		if _, err := putObject(r.sto, o.t, o.content); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func readAll(o plumbing.EncodedObject) ([]byte, error) {
	rd, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// damaged says whether err comes from a damaged local repository (a
// missing or unreadable object) rather than from the upstream or the
// caller: what a repair can fix.
func damaged(err error) bool {
	if err == nil || errors.Is(err, ErrUpstream) || errors.Is(err, ErrOptions) || errors.Is(err, ErrConflict) ||
		errors.Is(err, ErrRejected) || errors.Is(err, ErrPullRequest) {
		return false
	}
	if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, ErrInternal) || errors.Is(err, zlib.ErrChecksum) ||
		errors.Is(err, zlib.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, packfile.ErrMalformedPackFile) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"object not found", "flate:", "zlib:", "malformed", "packfile", "unexpected EOF", "invalid object"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// maxWalk bounds the commits walked back from a head.
const maxWalk = 10000

// readableHistory checks that the commits from head back to stop (not
// included; at most limit commits) and everything their trees reach can
// be read: every commit and tree decodes and every blob is present.
func (r *Repo) readableHistory(head, stop plumbing.Hash, limit int) (err error) {
	defer recoverInto(&err, r.log, "checking commit "+head.String())
	seen := map[plumbing.Hash]bool{}
	var tree func(h plumbing.Hash) error
	tree = func(h plumbing.Hash) error {
		if seen[h] {
			return nil
		}
		seen[h] = true
		ents, err := treeEntries(r.sto, h)
		if err != nil {
			return err
		}
		for _, e := range ents {
			switch {
			case e.Mode == filemode.Dir:
				if err := tree(e.Hash); err != nil {
					return err
				}
			case e.Mode == filemode.Submodule || seen[e.Hash]:
			default:
				seen[e.Hash] = true
				if err := r.sto.HasEncodedObject(e.Hash); err != nil {
					return fmt.Errorf("blob %s (%s): %w", e.Hash, e.Name, err)
				}
			}
		}
		return nil
	}
	for h, n := head, 0; !h.IsZero() && h != stop && n < limit; n++ {
		c, err := object.GetCommit(r.sto, h)
		if err != nil {
			return fmt.Errorf("commit %s: %w", h, err)
		}
		if err := tree(c.TreeHash); err != nil {
			return fmt.Errorf("commit %s: %w", h, err)
		}
		if len(c.ParentHashes) == 0 || r.isShallow(h) {
			break
		}
		h = c.ParentHashes[0]
	}
	return nil
}
