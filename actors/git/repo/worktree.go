package repo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// abs returns the absolute path of a tool-root-relative path.
func (r *Repo) abs(p string) string { return filepath.Join(r.opts.Dir, filepath.FromSlash(p)) }

// ignored says whether a path is never committed (nor written from the
// upstream): the node-local paths (.git, .agentos, agentos.json) always,
// plus Options.Ignore.
func (r *Repo) ignored(p string) bool {
	if nodeLocal(p) {
		return true
	}
	if top, _, _ := strings.Cut(p, "/"); strings.HasPrefix(top, initPrefix) {
		return true
	}
	if tempFile(path.Base(p)) {
		return true
	}
	for _, ig := range r.opts.Ignore {
		ig = strings.TrimPrefix(filepath.ToSlash(ig), "./")
		if strings.HasSuffix(ig, "/") {
			if p == strings.TrimSuffix(ig, "/") || strings.HasPrefix(p, ig) {
				return true
			}
		} else if p == ig {
			return true
		}
	}
	return false
}

func (r *Repo) isDerived(p string) bool {
	for _, d := range r.opts.Derived {
		if d == p {
			return true
		}
	}
	return false
}

// tempFile says whether a file name is an in-flight temporary file of a
// writer (ours, "agentos-tmp-*", or the jail's ".<name>.<rand>.agentos-tmp",
// possibly another process's): never work, never committed.
func tempFile(name string) bool {
	return strings.HasPrefix(name, tmpPrefix) || strings.HasSuffix(name, ".agentos-tmp")
}

// linkError is the error of a working path that is, or is under, a
// symbolic link: links are never committed, nor read through.
type linkError struct{ path, link string }

func (e *linkError) Error() string {
	if e.path == e.link {
		return fmt.Sprintf("%s is a symbolic link: links are never committed; write the file itself", e.path)
	}
	return fmt.Sprintf("%s is under %s, a symbolic link: nothing is read or committed through a link", e.path, e.link)
}

// workEntry hashes the working-tree file at p (absent entry when missing);
// store also writes its blob. A symbolic link at p, or on the way to it,
// is a *linkError.
func (r *Repo) workEntry(p string, store bool) (entry, error) {
	if l := r.linkAt(p, false); l != "" {
		return entry{}, &linkError{p, l}
	}
	a := r.abs(p)
	fi, err := os.Lstat(a)
	if gone(err) {
		return entry{}, nil
	}
	if err != nil {
		return entry{}, err
	}
	var content []byte
	mode := filemode.Regular
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return entry{}, &linkError{p, p}
	case fi.Mode().IsRegular():
		if content, err = os.ReadFile(a); errors.Is(err, fs.ErrNotExist) {
			return entry{}, nil // removed meanwhile (by another process)
		} else if err != nil {
			return entry{}, err
		}
		if fi.Mode()&0o111 != 0 {
			mode = filemode.Executable
		}
	default:
		return entry{}, nil // a directory, socket ...: not a file
	}
	h := plumbing.ComputeHash(plumbing.BlobObject, content)
	r.recordStat(p, h, mode, fi)
	if store && h != r.files[p].hash {
		if _, err := putObject(r.sto, plumbing.BlobObject, content); err != nil {
			return entry{}, err
		}
	}
	return entry{hash: h, mode: mode}, nil
}

// walkWork calls fn for every file of the working tree that may be
// committed (not .git, not ignored).
func (r *Repo) walkWork(under string, fn func(p string, d fs.DirEntry) error) error {
	root := r.opts.Dir
	if under != "" {
		root = r.abs(under)
	}
	return filepath.WalkDir(root, func(a string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(r.opts.Dir, a)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		p := filepath.ToSlash(rel)
		if r.ignored(p) {
			if r.walk != nil { // a directory with a final slash
				r.walkSkipped = append(r.walkSkipped, p+map[bool]string{true: "/"}[d.IsDir()])
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0 {
			return fn(p, d)
		}
		return nil
	})
}

// fileOp is one working-tree update.
type fileOp struct {
	p        string
	from, to entry
}

// workDirty says whether the working file at p no longer holds e (the
// entry the tree the working tree is at gives it): the tool wrote it (or
// deleted it) and did not persist it yet. It returns the working entry,
// whose blob is stored when it differs from e.
//
// A symbolic link is not work (it is never committed): it reads as clean,
// so an update replaces it (by rename: the link itself, not its target).
func (r *Repo) workDirty(p string, e entry) (entry, bool, error) {
	if r.linkAt(p, false) != "" {
		return e, false, nil
	}
	fi, err := os.Lstat(r.abs(p))
	if gone(err) {
		return entry{}, !e.absent(), nil
	}
	if err != nil {
		return entry{}, false, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return e, false, nil
	}
	if !e.absent() && r.statClean(p, e.hash, fi) {
		return e, false, nil
	}
	w, err := r.workEntry(p, true)
	if err != nil {
		return entry{}, false, err
	}
	return w, w != e, nil
}

// guarded says whether moveTo must check that a working file still holds
// the tree's content before it overwrites or deletes it: always, except in
// the first checkout and for derived files that Regenerate rebuilds.
func (r *Repo) guarded(p string) bool {
	return !r.direct && !(r.opts.Regenerate != nil && r.isDerived(p))
}

// moveTo makes r.tree = tree: the working tree is updated file by file
// (deletions first), except the paths in keep, whose working files are
// left alone (uncommitted changes, or content we just committed). A
// working file that no longer holds the content of the tree it was at (a
// tool wrote it meanwhile and has not persisted it yet) is never
// overwritten or deleted either: it stays, and its tool's next Persist
// commits it.
func (r *Repo) moveTo(tree plumbing.Hash, keep map[string]bool) error {
	if tree == r.tree {
		return nil
	}
	ops, err := r.moveOps(tree, keep)
	if err != nil {
		return err
	}
	r.tree = tree
	for _, op := range ops {
		if err := r.applyMove(op); err != nil {
			return err
		}
	}
	return nil
}

// moveOps sets r.files to tree's files and returns the working-tree
// operations from r.tree to tree, deletions first, leaving out the paths
// in keep and those never checked out (whose stat cache entries go).
func (r *Repo) moveOps(tree plumbing.Hash, keep map[string]bool) ([]fileOp, error) {
	var dels, writes []fileOp
	err := diffTrees(r.sto, r.tree, tree, func(p string, from, to entry) {
		if to.absent() {
			delete(r.files, p)
		} else {
			r.files[p] = to
		}
		if keep[p] {
			delete(r.idx, p)
			return
		}
		if !safeTreePath(p) || r.ignored(p) {
			delete(r.idx, p)
			r.warnUpstreamPath(p)
			return
		}
		if to.absent() {
			dels = append(dels, fileOp{p, from, to})
		} else {
			writes = append(writes, fileOp{p, from, to})
		}
	})
	return append(dels, writes...), err
}

// applyMove deletes or writes op's working file, unless a tool wrote it
// since it was checked out (see moveTo).
func (r *Repo) applyMove(op fileOp) error {
	if kept, err := r.writtenSince(op); err != nil || kept {
		return err
	}
	if op.to.absent() {
		return r.removeWork(op.p)
	}
	return r.writeWork(op.p, op.to)
}

// writtenSince says whether moveTo must leave op's working file alone: it
// is guarded and no longer holds op.from (already op.to, or written by a
// tool and not persisted yet, which is warned about). Its stat cache
// entry goes either way.
func (r *Repo) writtenSince(op fileOp) (bool, error) {
	if !r.guarded(op.p) {
		delete(r.idx, op.p)
		return false, nil
	}
	w, dirty, err := r.workDirty(op.p, op.from)
	delete(r.idx, op.p)
	if err != nil || !dirty {
		return false, err
	}
	if w == op.to {
		return true, nil // already there
	}
	r.log.Warn("git: keeping a file written since it was last checked out (not persisted yet)", slog.String("path", op.p))
	return true, nil
}

// resetWork makes the working file at p hold r.files[p] (deleting it when
// the tree has no such file).
func (r *Repo) resetWork(p string) error {
	delete(r.idx, p)
	if !safeTreePath(p) || r.ignored(p) {
		return nil
	}
	f, ok := r.files[p]
	if !ok {
		return r.removeWork(p)
	}
	return r.writeWork(p, f)
}

// removeWork deletes the working file at p (never through a linked
// directory) and the directories it leaves empty.
func (r *Repo) removeWork(p string) error {
	if l := r.linkAt(p, false); l != "" {
		r.log.Warn("git: not deleting a file under a symbolic link", slog.String("path", p), slog.String("link", l))
		return nil
	}
	if err := os.Remove(r.abs(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if r.walk != nil {
		delete(r.walk, p)
	}
	r.removeEmptyParents(p)
	return nil
}

// writeWork writes a blob to the working tree (by rename: a kill never
// leaves a half-written tool).
//
// IMPORTANT: this is the one place the working tree is written from a
// tree: only regular files are (see checkout.go), never through a linked
// directory; a link at p itself is replaced, not followed.
func (r *Repo) writeWork(p string, e entry) error {
	if why := r.writeRefusal(p, e); why != "" {
		r.refuse(p, e, why)
		return nil
	}
	o, err := r.sto.EncodedObject(plumbing.BlobObject, e.hash)
	if err != nil {
		return err
	}
	if o.Size() > r.opts.MaxFileBytes {
		r.refuse(p, e, fmt.Sprintf("the file is %d bytes, over git.max_file_bytes (%d): large files are never checked out", o.Size(), r.opts.MaxFileBytes))
		return nil
	}
	delete(r.refused, p)
	content, err := readObject(o)
	if err != nil {
		return err
	}
	fi, err := r.putFile(r.abs(p), content, e.mode)
	if fi == nil {
		r.walk = nil // its stat of p is stale now: Walked is not given, the registry walks
	}
	if err != nil || fi == nil {
		return err
	}
	r.recordStat(p, e.hash, e.mode, fi)
	r.recordCheckout(p, e, fi)
	if r.walk != nil {
		r.walk[p] = fi
	}
	if r.direct && r.opts.CheckedOut != nil {
		r.opts.CheckedOut(p, content, fi)
	}
	return nil
}

// recordCheckout keeps, for the index only, the stat data of a file the
// fresh checkout (r.direct) just wrote that recordStat left without
// (modified within racyWindow: all of them). The next Hydrate trusts them
// under loadIndex's rule (modified before the index was written).
//
// IMPORTANT: this is git's own checkout rule, and its blind spot: another
// process rewriting such a file with the same size within the same tick of
// the file system's clock as the checkout's write (and before the index is
// written) is not seen. It applies only to the fresh checkout, which runs
// under the root lock in a tool root no agentos writer used yet; writes of
// a pull or a rebase keep the racyWindow rule.
func (r *Repo) recordCheckout(p string, e entry, fi fs.FileInfo) {
	if !r.direct || !r.idx[p].ModifiedAt.IsZero() {
		return
	}
	st := index.Entry{Name: p, Hash: e.hash, Mode: e.mode}
	fillStat(&st, fi)
	r.checkoutStat[p] = st
}

// putFile writes content at the absolute path a with the permissions of
// mode, replacing a directory or link there: in place during the first
// checkout, by rename otherwise. It returns the written file's stat (nil
// if it could not be read).
func (r *Repo) putFile(a string, content []byte, mode filemode.FileMode) (fs.FileInfo, error) {
	if fi, err := os.Lstat(a); err == nil && (fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0) {
		if err := os.Remove(a); err != nil {
			return nil, err
		}
	}
	perm := os.FileMode(0o644)
	if mode == filemode.Executable {
		perm = 0o755
	}
	if r.direct {
		return writeDirect(a, content, perm)
	}
	if err := atomicWrite(r.gitDir, a, content, perm); err != nil {
		return nil, err
	}
	fi, _ := os.Lstat(a)
	return fi, nil
}

// writeRefusal says why the tree entry e is never written at p (its mode,
// its name, a linked directory on the way), or "". Its size is checked by
// writeWork on the object itself, before its content is read: the object
// is opened once (go-git's EncodedObjectSize tries a loose file before the
// packs, a failing open per packed blob of a fresh checkout), and one over
// largeObjectBytes is read lazily, so a refused file is never read whole.
func (r *Repo) writeRefusal(p string, e entry) string {
	if why := checkoutRefusal(e.mode); why != "" {
		return why
	}
	if why := nameRefusal(p); why != "" {
		return why
	}
	if l := r.linkAt(p, false); l != "" {
		return "its directory " + l + " is a symbolic link in the tool root: nothing is written through a link"
	}
	return ""
}

// recordStat remembers the stat data of a working file whose content was
// just written or read with hash h (the index's stat cache).
//
// A file modified less than racyWindow ago is "racily clean": it may be
// written again without its size or mtime changing (coarse timestamps), so
// no stat data is kept for it and the next check hashes it (as git smudges
// such entries).
func (r *Repo) recordStat(p string, h plumbing.Hash, mode filemode.FileMode, fi fs.FileInfo) {
	delete(r.checkoutStat, p)
	e := index.Entry{Name: p, Hash: h, Mode: mode}
	if fi.ModTime().Before(time.Now().Add(-racyWindow)) {
		fillStat(&e, fi)
	}
	r.idx[p] = e
}

// racyWindow covers the timestamp granularity of common filesystems.
const racyWindow = 2 * time.Second

// writeDirect writes a file in place (first checkout only: until the refs
// are written, a killed checkout is redone from scratch, and a half-written
// file is replaced by the upstream's version) and returns its stat, read
// from the open file once written (nil if it could not be).
func writeDirect(a string, content []byte, perm os.FileMode) (fs.FileInfo, error) {
	f, err := os.OpenFile(a, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(a), 0o755); err == nil {
			f, err = os.OpenFile(a, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
		}
	}
	if err != nil {
		return nil, err
	}
	_, err = f.Write(content)
	fi, _ := f.Stat()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return fi, err
}

func (r *Repo) removeEmptyParents(p string) {
	for d := filepath.Dir(r.abs(p)); d != r.opts.Dir && strings.HasPrefix(d, r.opts.Dir); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			return
		}
	}
}

// loadIndex reads the stat cache of .git/index (empty when missing or
// unreadable).
func (r *Repo) loadIndex() {
	r.idx = map[string]index.Entry{}
	r.checkoutStat = map[string]index.Entry{}
	f, err := os.Open(filepath.Join(r.gitDir, "index"))
	if err != nil {
		return
	}
	defer f.Close()
	var idx index.Index
	if err := index.NewDecoder(bufio.NewReader(f)).Decode(&idx); err != nil {
		return
	}
	fi, err := f.Stat()
	if err != nil {
		return
	}
	for _, e := range idx.Entries {
		// Racily clean (git's rule): modified no earlier than the index was
		// written, the file may have changed without its stat data.
		if !e.ModifiedAt.Before(fi.ModTime()) {
			continue
		}
		r.idx[e.Name] = *e
	}
}

// statClean says whether the working file at p is unchanged since the
// index recorded it with the hash h: its size, modification time, change
// time and inode are those recorded (the change time and inode where the
// platform gives them). A file rewritten with the same size and its
// modification time put back has a new change time: it is not clean.
func (r *Repo) statClean(p string, h plumbing.Hash, fi fs.FileInfo) bool {
	e, ok := r.idx[p]
	if !ok || e.Hash != h || e.ModifiedAt.IsZero() {
		return false
	}
	var cur index.Entry
	fillStat(&cur, fi)
	return e.Size == cur.Size && e.ModifiedAt.Equal(cur.ModifiedAt) && e.CreatedAt.Equal(cur.CreatedAt) && e.Inode == cur.Inode
}

// writeIndex writes .git/index for r.tree so that `git status` in the tool
// root is right. Paths with uncommitted changes get no stat data (git
// rehashes them). Written by rename, like everything else.
func (r *Repo) writeIndex() error {
	names := make([]string, 0, len(r.files))
	for p := range r.files {
		names = append(names, p)
	}
	sort.Strings(names)
	idx := &index.Index{Version: 2, Entries: make([]*index.Entry, 0, len(names))}
	for _, p := range names {
		f := r.files[p]
		if f.mode == filemode.Submodule {
			continue
		}
		// Stat data only when the file is known to hold f's content;
		// otherwise git rehashes the file.
		e, ok := r.idx[p]
		if !ok || e.Hash != f.hash || r.pending[p] {
			e = index.Entry{Name: p, Hash: f.hash, Mode: f.mode}
		} else if c, ok := r.checkoutStat[p]; ok && c.Hash == f.hash && e.ModifiedAt.IsZero() {
			e = c
		}
		idx.Entries = append(idx.Entries, &e)
	}
	var buf bytes.Buffer
	if err := index.NewEncoder(&buf).Encode(idx); err != nil {
		return err
	}
	err := atomicWrite(r.gitDir, filepath.Join(r.gitDir, "index"), buf.Bytes(), 0o644)
	r.smudgeCheckoutStat(err)
	return err
}

// smudgeCheckoutStat drops the fresh checkout's stat data that is not older
// than the index just written (racily clean: an edit of the same size in
// that tick changes none of it; git smudges such entries), or all of it
// when the write failed. IMPORTANT: it MUST run after every index write:
// a later write (Close's, in a later tick) would otherwise carry that stat
// data into an index the next start trusts it under.
func (r *Repo) smudgeCheckoutStat(writeErr error) {
	if len(r.checkoutStat) == 0 {
		return
	}
	fi, err := os.Lstat(filepath.Join(r.gitDir, "index"))
	for p, e := range r.checkoutStat {
		if writeErr != nil || err != nil || !e.ModifiedAt.Before(fi.ModTime()) {
			delete(r.checkoutStat, p)
		}
	}
}

// gone says whether err, from an lstat of a working path, means no file
// is there: it does not exist, or a directory on its way is now a file (a
// tool replaced the directory tools/x by a file tools/x: tools/x/a.ts is
// gone, not unreadable).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
