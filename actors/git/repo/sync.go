package repo

// sync: bringing the tool root to the upstream (first checkout, or the
// local work replayed on it), and reading the working tree's state.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// sync loads the state from disk, fetches, and brings the tool root to the
// upstream (see Hydrate). Called with r.mu held.
func (r *Repo) sync(ctx context.Context) error {
	r.resync = true
	defer func() { r.walk, r.walkSkipped = nil, nil }() // given within this sync, or never
	local, track, fresh := r.loadRefs()
	r.local, r.upstream = local, track
	u, err := r.fetch(ctx)
	if err != nil {
		return err
	}
	if u.IsZero() {
		if u, err = r.createBranch(ctx); err != nil {
			return err
		}
	}
	local = r.dropUnreadableLocal(local, track)
	if local.IsZero() && !fresh {
		r.log.Warn("git: the tool root's branch is missing or damaged; checking out the upstream's and keeping every working file that differs from it (those an agentos write left half-done are recovered under their own commit)",
			slog.String("branch", r.opts.Branch))
	}
	r.loadIndex()
	r.loadLocalOnly()
	r.pending = map[string]bool{}
	r.files = map[string]entry{}
	r.chain = nil
	if local.IsZero() {
		err = r.firstCheckout(u, fresh)
	} else {
		err = r.replayLocal(ctx, local, track, u)
	}
	if err != nil {
		return err
	}
	if r.opts.Strategy == Direct {
		if err := r.settleDirect(ctx); err != nil {
			return err
		}
	}
	if err := r.writeState(); err != nil {
		return err
	}
	r.resync = false
	r.syncs++
	return nil
}

// loadRefs reads the local branch and the tracking ref, and the shallow
// boundary, from disk; fresh says no checkout ever completed here (no
// ref, and no index: it is written after the refs at the end of every
// sync). A repair fetches everything the upstream has, not only what is
// new (it lost objects the upstream still holds), and forgets a tracking
// ref whose commit no longer reads.
func (r *Repo) loadRefs() (local, track plumbing.Hash, fresh bool) {
	_, ierr := os.Lstat(filepath.Join(r.gitDir, "index"))
	fresh = !r.refRecorded(r.branchRef) && errors.Is(ierr, fs.ErrNotExist)
	local = r.readRef(r.branchRef)
	track = r.readRef(r.trackRef)
	r.shallow = readShallow(r.gitDir)
	if !r.repairing {
		return local, track, fresh
	}
	r.fullFetch = true
	if !track.IsZero() && r.readableHistory(track, plumbing.ZeroHash, 1) != nil {
		track = plumbing.ZeroHash
	}
	return local, track, fresh
}

// dropUnreadableLocal returns local, or the zero hash when a repair finds
// the local commits not yet upstream (those after track) no longer read:
// they are dropped, and the working files they changed are kept.
func (r *Repo) dropUnreadableLocal(local, track plumbing.Hash) plumbing.Hash {
	if !r.repairing || local.IsZero() {
		return local
	}
	err := r.readableHistory(local, track, maxWalk)
	if err == nil {
		return local
	}
	r.log.Warn("git: the local commits not yet upstream can no longer be read; they are dropped, and every working file that differs from the upstream is kept (those an agentos write left half-done are recovered under their own commit)",
		slog.String("head", local.String()), slog.String("damage", err.Error()))
	return plumbing.ZeroHash
}

// replayLocal loads the local branch's tree and the working tree's changes
// to it, finds the local commits not yet upstream, and rebases them (and
// the pending changes) onto u.
func (r *Repo) replayLocal(ctx context.Context, local, track, u plumbing.Hash) error {
	var err error
	if r.tree, err = r.commitTree(local); err != nil {
		return err
	}
	if r.files, err = flatten(r.sto, r.tree); err != nil {
		return err
	}
	if err := r.scanDirty(); err != nil {
		return err
	}
	if err := r.loadChain(local, track, u); err != nil {
		return err
	}
	results, err := r.rebaseOnto(ctx, u)
	if err != nil {
		return err
	}
	r.warnConflicts(results)
	return nil
}

// settleDirect finishes a Direct sync: the changes a crash left unsaved
// are recovered (when recovering), and local commits left unpushed are
// pushed.
func (r *Repo) settleDirect(ctx context.Context) error {
	if r.recovering {
		if err := r.recoverUnsaved(); err != nil {
			return err
		}
	}
	if len(r.chain) == 0 {
		return nil
	}
	r.log.Info("git: pushing local commits left unpushed", slog.Int("commits", len(r.chain)))
	_, results, err := r.publish(ctx)
	r.warnConflicts(results)
	if err != nil {
		return err
	}
	r.published = r.local
	return nil
}

// writeState writes what a sync settled: the refs, the derived files, and
// the index last (its presence marks a completed checkout).
func (r *Repo) writeState() error {
	if err := r.saveRefs(); err != nil {
		return fmt.Errorf("repo: writing %s/packed-refs: %w", r.gitDir, err)
	}
	if err := r.regenerate(); err != nil {
		return err
	}
	if err := r.writeIndex(); err != nil {
		return fmt.Errorf("repo: writing the index: %w", err)
	}
	return nil
}

// firstCheckout checks out u into a tool root whose branch is unknown
// (absent, or dropped by a repair). Working files the upstream does not
// have stay: in a fresh tool root (no checkout ever completed in it) they
// are the user's own files and stay local (localOnly, never committed
// unless a Persist names them); after a repair they are changes of lost
// local commits, recovered under their own commit. Working files that differ
// from the upstream's are replaced by the upstream's version in a fresh
// tool root (with a warning), and kept after a repair.
func (r *Repo) firstCheckout(u plumbing.Hash, fresh bool) error {
	uTree, err := r.commitTree(u)
	if err != nil {
		return err
	}
	ufiles, err := flatten(r.sto, uTree)
	if err != nil {
		return err
	}
	plan, err := r.planFirstCheckout(ufiles, fresh)
	if err != nil {
		return err
	}
	r.warnLinks(plan.links)
	if len(plan.kept) > 0 {
		r.log.Warn("git: kept working files that differ from the upstream (changes of local commits that could not be read); they are recovered under their own commit", slog.Any("paths", plan.kept))
	}
	if err := r.keepLocal(plan.localOnly); err != nil {
		return err
	}
	r.tree = plumbing.ZeroHash
	r.direct = fresh
	err = r.moveTo(uTree, plan.keep)
	r.direct = false
	if err != nil {
		return err
	}
	r.local, r.upstream = u, u
	return nil
}

// checkoutPlan is what a first checkout does with the files already in
// the working tree.
type checkoutPlan struct {
	keep      map[string]bool // left in place by moveTo (true: the upstream has the path)
	localOnly []string        // the user's own files, to stay local
	kept      []string        // differing from the upstream's, kept after a repair
	links     []string        // symbolic links, never committed
}

// planFirstCheckout walks the working tree and decides, for each file,
// against the upstream's files ufiles (see firstCheckout). It marks the
// files to commit pending.
func (r *Repo) planFirstCheckout(ufiles map[string]entry, fresh bool) (checkoutPlan, error) {
	plan := checkoutPlan{keep: map[string]bool{}}
	err := r.walkWork("", func(p string, d fs.DirEntry) error {
		e, err := r.workEntry(p, false)
		var le *linkError
		if errors.As(err, &le) {
			plan.links = append(plan.links, p)
			return nil
		}
		if err != nil {
			return err
		}
		r.planFile(&plan, p, e, ufiles, fresh)
		return nil
	})
	return plan, err
}

// planFile decides what the first checkout does with the working file p
// (read as e).
func (r *Repo) planFile(plan *checkoutPlan, p string, e entry, ufiles map[string]entry, fresh bool) {
	uf, inUpstream := ufiles[p]
	switch {
	case r.localOnly[p]:
		plan.keep[p] = inUpstream
	case !inUpstream:
		if fresh && !r.isDerived(p) {
			plan.localOnly = append(plan.localOnly, p)
		} else {
			r.pending[p] = true
		}
	case uf == e:
		plan.keep[p] = true
	case fresh || !r.guarded(p):
		r.log.Warn("git: a file already in the tool root is replaced by the upstream's version", slog.String("path", p))
	default:
		plan.keep[p], r.pending[p] = true, true
		plan.kept = append(plan.kept, p)
	}
}

// keepLocal records paths (files found before the first checkout that the
// upstream does not have) as local-only in the exclude file.
func (r *Repo) keepLocal(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	for _, p := range paths {
		r.localOnly[p] = true
	}
	if err := r.saveLocalOnly(); err != nil {
		return fmt.Errorf("repo: recording the local files in %s: %w", excludeFile, err)
	}
	r.log.Info("git: files that were in the tool root before its first checkout and that the upstream does not have stay local (listed in .git/"+excludeFile+"); a write of one of them (write_file, Persist by name) publishes it",
		slog.Int("files", len(paths)), slog.Any("paths", firstN(paths, 20)))
	return nil
}

// warnLinks warns about the symbolic links found in the tool root.
func (r *Repo) warnLinks(links []string) {
	if len(links) > 0 {
		r.log.Warn("git: symbolic links in the tool root are never committed", slog.Any("paths", links))
	}
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(append([]string{}, s[:n]...), fmt.Sprintf("... and %d more", len(s)-n))
}

// scanDirty finds the working-tree files that differ from r.files
// (pending) and restores tracked files that are missing. A symbolic link
// at a tracked path (an earlier version checked out links from the
// upstream) is removed (and the tracked file restored when it is a
// regular file); other links are never committed.
func (r *Repo) scanDirty() error {
	seen := make(map[string]bool, len(r.files))
	var links []string
	if r.opts.Walked != nil && !r.walkGiven {
		r.walk, r.walkSkipped = make(map[string]fs.FileInfo, len(r.files)), nil
	}
	pre := r.preloadStat()
	err := r.walkWork("", func(p string, d fs.DirEntry) error {
		seen[p] = true
		fi := pre[p]
		if r.walk != nil && fi == nil {
			fi, _ = d.Info() // nil if it vanished since it was listed: scanFile finds out
		}
		if r.walk != nil && fi != nil {
			r.walk[p] = fi
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return r.scanFile(p, d, fi)
		}
		f, tracked := r.files[p]
		if !tracked {
			links = append(links, p)
			return nil
		}
		if err := os.Remove(r.abs(p)); err != nil {
			return err
		}
		r.log.Warn("git: removed a symbolic link at a tracked path of the tool root", slog.String("path", p), slog.String("tracked mode", f.mode.String()))
		return r.writeWork(p, f)
	})
	if err != nil {
		return err
	}
	r.warnLinks(links)
	return r.restoreMissing(seen)
}

// preloadMin is the number of tracked files from which preloadStat
// lstat's them on several goroutines (git's preload_index: 500 a thread).
const preloadMin = 1000

// preloadHook, when set (tests), is told how many files preloadStat read.
var preloadHook func(n int)

// preloadStat lstat's the tracked files of a large tree on as many
// goroutines as there are cores (at most 8) before the walk meets them
// one by one, as git's core.preloadIndex does: their lstat, most of a
// later start's scan, then overlaps. It returns each file's stat by path
// (nil on one core or a small tree); the walk takes a file's stat from it
// instead of reading it again. A file changed between the two reads it as
// it was at the preload: a change made during the scan, seen at the next.
func (r *Repo) preloadStat() map[string]fs.FileInfo {
	workers := min(runtime.GOMAXPROCS(0), 8, len(r.files)/(preloadMin/2))
	if workers < 2 {
		return nil
	}
	paths := make([]string, 0, len(r.files))
	for p := range r.files {
		paths = append(paths, p)
	}
	stats := make([]fs.FileInfo, len(paths))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(paths); i += workers {
				stats[i], _ = os.Lstat(r.abs(paths[i])) // nil when absent: the walk reads it if it meets it
			}
		})
	}
	wg.Wait()
	if preloadHook != nil {
		preloadHook(len(paths))
	}
	out := make(map[string]fs.FileInfo, len(paths))
	for i, p := range paths {
		if stats[i] != nil {
			out[p] = stats[i]
		}
	}
	return out
}

// scanFile marks the working file p pending when it differs from r.files
// (and is not a conflict's version, which its tool's Persist reports); fi
// is its lstat when the walk read it already (else nil).
func (r *Repo) scanFile(p string, d fs.DirEntry, fi fs.FileInfo) error {
	if r.localOnly[p] {
		return nil
	}
	f, tracked := r.files[p]
	if tracked {
		var err error
		if fi == nil {
			fi, err = d.Info()
		}
		if err == nil && r.statClean(p, f.hash, fi) {
			return nil
		}
	}
	e, err := r.workEntry(p, false)
	var le *linkError
	if errors.As(err, &le) {
		return nil
	}
	if err != nil {
		return err
	}
	if e == f {
		return nil
	}
	if c, ok := r.conflicts[p]; ok && c.entry == e {
		return nil // on a conflict branch; its tool's Persist reports it
	}
	r.pending[p] = true
	return nil
}

// restoreMissing writes the tracked files the walk did not see (seen)
// back into the tool root, refusing those a checkout never writes. A
// tracked file replaced by a directory, or whose directory was replaced by
// a file or a link (by hand, while the node was stopped), is not restored:
// its deletion is pending, as is what replaced it.
func (r *Repo) restoreMissing(seen map[string]bool) error {
	for _, p := range sortedKeys(r.files) {
		if seen[p] || r.ignored(p) || !safeTreePath(p) {
			continue
		}
		if by := r.replacedBy(p, seen); by != "" {
			r.log.Info("git: a tracked file was replaced in the tool root; its deletion is pending", slog.String("path", p), slog.String("replaced by", by))
			r.pending[p] = true
			continue
		}
		f := r.files[p]
		if why := checkoutRefusal(f.mode); why != "" {
			r.refuse(p, f, why)
			continue
		}
		r.log.Info("git: restoring a tracked file missing from the tool root", slog.String("path", p))
		if err := r.writeWork(p, f); err != nil {
			return err
		}
	}
	return nil
}

// replacedBy says what replaced the missing tracked file p: a directory
// at p, or a file or link the walk saw (seen) at a directory of its path;
// "" when nothing did.
func (r *Repo) replacedBy(p string, seen map[string]bool) string {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && seen[p[:i]] {
			return "a file at " + p[:i]
		}
	}
	if fi, err := os.Lstat(r.abs(p)); err == nil && fi.IsDir() {
		return "a directory"
	}
	return ""
}

// loadChain finds the local commits not known to be upstream: those after
// the tracking ref (or after u, or after their merge base with u).
func (r *Repo) loadChain(local, track, u plumbing.Hash) error {
	commits, base, err := r.commitsAfter(local, track, u)
	if err != nil {
		return err
	}
	r.upstream = base
	r.chain = nil
	for i := len(commits) - 1; i >= 0; i-- {
		cs, err := r.changeSetOf(commits[i])
		if err != nil {
			return err
		}
		r.chain = append(r.chain, cs)
	}
	return nil
}

// commitsAfter returns the local commits after track or u (whichever the
// walk from local meets first, within maxWalk), newest first, and that
// base; when it meets neither, those after local's merge base with u.
func (r *Repo) commitsAfter(local, track, u plumbing.Hash) ([]*object.Commit, plumbing.Hash, error) {
	var commits []*object.Commit
	for h, n := local, 0; !h.IsZero() && n < maxWalk; n++ {
		if h == track || h == u {
			return commits, h, nil
		}
		c, err := object.GetCommit(r.sto, h)
		if err != nil {
			return nil, plumbing.ZeroHash, err
		}
		commits = append(commits, c)
		if len(c.ParentHashes) == 0 || r.isShallow(h) {
			break
		}
		h = c.ParentHashes[0]
	}
	if len(r.shallow) > 0 {
		// The merge base may lie beyond the shallow boundary: fetch the
		// history (the caller repairs on this error) and look again.
		r.fullFetch = true
		return nil, plumbing.ZeroHash, fmt.Errorf("repo: the local branch %s does not descend from the upstream's %s within the fetched history: %w", short(local), short(u), plumbing.ErrObjectNotFound)
	}
	return r.commitsAfterMergeBase(local, u)
}

// commitsAfterMergeBase returns the commits from local back to its merge
// base with u (exclusive; to the root when there is none), newest first,
// and that base.
func (r *Repo) commitsAfterMergeBase(local, u plumbing.Hash) ([]*object.Commit, plumbing.Hash, error) {
	lc, err := object.GetCommit(r.sto, local)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	uc, err := object.GetCommit(r.sto, u)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	base := plumbing.ZeroHash
	if mbs, err := lc.MergeBase(uc); err == nil && len(mbs) > 0 {
		base = mbs[0].Hash
	}
	var commits []*object.Commit
	for h := local; !h.IsZero() && h != base; {
		c, err := object.GetCommit(r.sto, h)
		if err != nil {
			return nil, plumbing.ZeroHash, err
		}
		commits = append(commits, c)
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return commits, base, nil
}

// changeSetOf reads the local commit c as a change set: the entries it
// changed against its first parent (every entry for a root commit).
func (r *Repo) changeSetOf(c *object.Commit) (*changeSet, error) {
	parentTree := plumbing.ZeroHash
	if len(c.ParentHashes) > 0 {
		t, err := r.commitTree(c.ParentHashes[0])
		if err != nil {
			return nil, err
		}
		parentTree = t
	}
	cs := &changeSet{commit: c.Hash, tree: c.TreeHash, message: c.Message, author: c.Author, changes: map[string]entry{}}
	if err := diffTrees(r.sto, parentTree, c.TreeHash, func(p string, _, to entry) { cs.changes[p] = to }); err != nil {
		return nil, err
	}
	cs.tool = r.toolName(sortedKeys(cs.changes))
	return cs, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
