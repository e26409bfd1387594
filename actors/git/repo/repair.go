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
	q := &quarantine{dir: filepath.Join(r.gitDir, corruptDir, r.opts.Now().UTC().Format("20060102T150405.000000000")), moved: map[string]bool{}, log: r.log}
	if err := os.MkdirAll(q.dir, 0o755); err != nil {
		return false, fmt.Errorf("repo: repairing %s: %w", r.gitDir, err)
	}
	salvaged := 0
	for _, p := range problems {
		r.log.Warn("git: damaged file in the tool root's repository", slog.String("kind", p.Kind), slog.String("file", p.Path), slog.String("problem", p.Reason))
		if p.Kind != "pack" && p.Kind != "index" {
			q.move(p.Path)
			continue
		}
		base := strings.TrimSuffix(strings.TrimSuffix(p.Path, ".pack"), ".idx")
		if _, err := os.Stat(base + ".pack"); err == nil && !q.moved[base+".pack"] {
			salvaged += r.salvage(base + ".pack")
		}
		for _, ext := range []string{".pack", ".idx", ".rev"} {
			q.move(base + ext)
		}
	}
	if err := r.sto.reopen(r.gitDir); err != nil {
		r.log.Warn("git: closing the object store", slog.String("err", err.Error()))
	}
	if err := r.sto.flush(); err != nil {
		return true, fmt.Errorf("repo: writing the %d objects salvaged from damaged packs: %w", salvaged, err)
	}
	r.log.Warn("git: moved damaged files aside; repairing from the upstream",
		slog.String("moved to", q.dir), slog.Int("files", len(q.moved)), slog.Int("objects salvaged", salvaged))
	return true, nil
}

// quarantine is the directory damaged files are moved to, and those moved.
type quarantine struct {
	dir   string
	moved map[string]bool
	log   *slog.Logger
}

// move moves the file p into the quarantine (once), or removes it when it
// cannot be moved.
func (q *quarantine) move(p string) {
	if q.moved[p] {
		return
	}
	q.moved[p] = true
	if err := os.Rename(p, filepath.Join(q.dir, filepath.Base(p))); err != nil && !errors.Is(err, os.ErrNotExist) {
		q.log.Warn("git: could not move a damaged file aside; removing it", slog.String("file", p), slog.String("err", err.Error()))
		_ = os.Remove(p)
	}
}

// salvage keeps the readable objects of the damaged pack (see
// salvagePack) and returns how many.
func (r *Repo) salvage(pack string) int {
	n, err := r.salvagePack(pack)
	if err != nil {
		r.log.Warn("git: salvaged the objects before the damage", slog.String("pack", pack), slog.Int("objects", n), slog.String("stopped at", err.Error()))
	}
	return n
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
	s := &salvaged{sto: r.sto, byOffset: map[int64]rawObject{}, byHash: map[plumbing.Hash]rawObject{}}
	for i := uint32(0); i < count; i++ {
		h, err := sc.NextObjectHeader()
		if err != nil {
			return n, err
		}
		var buf bytes.Buffer
		if _, _, err := sc.NextObject(&buf); err != nil {
			return n, err
		}
		o, ok := s.resolve(h, rawObject{t: h.Type, content: buf.Bytes()})
		if !ok {
			continue // its base is lost (so is it), or the delta is damaged
		}
		hash := plumbing.ComputeHash(o.t, o.content)
		s.byOffset[h.Offset], s.byHash[hash] = o, o
		if _, err := putObject(r.sto, o.t, o.content); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// rawObject is an object's type and content.
type rawObject struct {
	t       plumbing.ObjectType
	content []byte
}

// salvaged are the objects salvagePack rebuilt so far, the bases of the
// deltas that follow.
type salvaged struct {
	sto      *store
	byOffset map[int64]rawObject
	byHash   map[plumbing.Hash]rawObject
}

// resolve returns the object o read at h: itself, or for a delta the
// object it rebuilds from its base (salvaged, or for a reference delta
// already in the store); false when the base is lost or the delta does not
// apply.
func (s *salvaged) resolve(h *packfile.ObjectHeader, o rawObject) (rawObject, bool) {
	var base rawObject
	var ok bool
	switch h.Type {
	case plumbing.OFSDeltaObject:
		base, ok = s.byOffset[h.OffsetReference]
	case plumbing.REFDeltaObject:
		base, ok = s.refBase(h.Reference)
	default:
		return o, true
	}
	if !ok {
		return rawObject{}, false
	}
	content, err := packfile.PatchDelta(base.content, o.content)
	if err != nil {
		return rawObject{}, false
	}
	return rawObject{t: base.t, content: content}, true
}

// refBase finds the base h of a reference delta: salvaged, or in the
// store.
func (s *salvaged) refBase(h plumbing.Hash) (rawObject, bool) {
	if o, ok := s.byHash[h]; ok {
		return o, true
	}
	bo, err := s.sto.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return rawObject{}, false
	}
	b, err := readAll(bo)
	if err != nil {
		return rawObject{}, false
	}
	return rawObject{t: bo.Type(), content: b}, true
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
	if err == nil || isAny(err, notDamage) {
		return false
	}
	if isAny(err, damageErrors) {
		return true
	}
	msg := err.Error()
	for _, s := range damageTexts {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

var (
	// notDamage are the errors of the upstream or the caller.
	notDamage = []error{ErrUpstream, ErrOptions, ErrConflict, ErrRejected, ErrPullRequest}
	// damageErrors are those of a missing or unreadable object.
	damageErrors = []error{plumbing.ErrObjectNotFound, ErrInternal, zlib.ErrChecksum, zlib.ErrHeader, io.ErrUnexpectedEOF, packfile.ErrMalformedPackFile}
	// damageTexts are found in the text of such errors that lost their
	// identity (go-git's, wrapped with %v).
	damageTexts = []string{"object not found", "flate:", "zlib:", "malformed", "packfile", "unexpected EOF", "invalid object"}
)

// isAny says whether err is one of targets (errors.Is).
func isAny(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
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
	rc := readCheck{sto: r.sto, seen: map[plumbing.Hash]bool{}}
	for h, n := head, 0; !h.IsZero() && h != stop && n < limit; n++ {
		c, err := object.GetCommit(r.sto, h)
		if err != nil {
			return fmt.Errorf("commit %s: %w", h, err)
		}
		if err := rc.tree(c.TreeHash); err != nil {
			return fmt.Errorf("commit %s: %w", h, err)
		}
		if len(c.ParentHashes) == 0 || r.isShallow(h) {
			break
		}
		h = c.ParentHashes[0]
	}
	return nil
}

// readCheck is readableHistory's walk of trees: each tree and blob is
// checked once.
type readCheck struct {
	sto  *store
	seen map[plumbing.Hash]bool
}

// tree checks that the tree h and its subtrees decode and that their
// blobs are present.
func (rc readCheck) tree(h plumbing.Hash) error {
	if rc.seen[h] {
		return nil
	}
	rc.seen[h] = true
	ents, err := decodeTree(rc.sto, h)
	if err != nil {
		return err
	}
	for _, e := range ents {
		switch {
		case e.Mode == filemode.Dir:
			if err := rc.tree(e.Hash); err != nil {
				return err
			}
		case e.Mode == filemode.Submodule || rc.seen[e.Hash]:
		default:
			rc.seen[e.Hash] = true
			if err := rc.sto.HasEncodedObject(e.Hash); err != nil {
				return fmt.Errorf("blob %s (%s): %w", e.Hash, e.Name, err)
			}
		}
	}
	return nil
}
