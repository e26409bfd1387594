package repo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Repo is a tool root kept in sync with its upstream. It is safe for
// concurrent use: one operation runs at a time.
type Repo struct {
	mu     sync.Mutex
	opts   Options
	log    *slog.Logger
	gitDir string
	sto    *store
	closed bool
	// resync says the in-memory state may disagree with the disk after a
	// failure midway: the next operation reloads it (the refs on disk are
	// the truth; they are only written once a step is complete).
	resync bool
	// looseGone says loose files of our refs (which would shadow
	// packed-refs) were removed.
	looseGone bool
	// direct makes writeWork write in place (first checkout).
	direct bool

	branchRef plumbing.ReferenceName // refs/heads/<branch>
	trackRef  plumbing.ReferenceName // refs/remotes/origin/<branch>

	local    plumbing.Hash // our branch head
	upstream plumbing.Hash // the upstream head local is based on
	tree     plumbing.Hash // the tree the working tree holds (local's)
	files    map[string]entry
	chain    []*changeSet // unpushed commits upstream..local, oldest first
	pending  map[string]bool
	idx      map[string]index.Entry
	// conflicts are the working files kept by a rebase although they clash
	// with the upstream (written by a tool that had not persisted them
	// yet): their version is on a conflict branch, and the tool's Persist
	// of them reports it.
	conflicts map[string]conflictRecord
	// remote is what the upstream advertised at the last fetch (ref name ->
	// hash): the proposals (feat/, conflict/ branches) PR mode compares with.
	remote map[string]plumbing.Hash

	// seen is the disk state at the end of this Repo's last operation
	// (see lock.go): another process changed the tool root when it differs.
	seen string
	// repairing says sync runs after damage was found: fetch everything,
	// drop local commits that cannot be read, keep the working files.
	repairing bool
	// fullFetch makes the next fetch ask for everything (a repair).
	fullFetch bool
	// refused are the upstream's entries never checked out (links,
	// submodules, other modes), by path.
	refused map[string]Refusal
	// recovering says the running sync is Hydrate's: files a killed writer
	// left unsaved (r.pending) are committed under their own commit
	// (recoverUnsaved). Other syncs (a reload after another process wrote
	// the tool root) leave them pending: their writer may still persist
	// them.
	recovering bool
	// localOnly are the files that were in the tool root before its first
	// checkout and that the upstream does not have: they stay local (never
	// committed unless a Persist names them). Kept in .git/info/exclude.
	localOnly map[string]bool
}

// conflictRecord is a working file whose version was pushed to a conflict
// branch but kept in the working tree.
type conflictRecord struct {
	entry  entry
	commit plumbing.Hash
	err    *ConflictError
}

// changeSet is one local commit, replayable on another base.
type changeSet struct {
	commit  plumbing.Hash
	tree    plumbing.Hash
	message string
	author  object.Signature
	tool    string
	changes map[string]entry // path -> our entry (absent = deleted)
}

// Persisted says what Persist published.
type Persisted struct {
	// Commit is the published commit (the upstream head in Direct mode; the
	// feature or conflict branch's head otherwise). For a no-op Persist, the
	// current head.
	Commit string
	// Branch is where Commit was pushed.
	Branch string
	// Attempts counts pushes to Branch (0: nothing to publish).
	Attempts int
	// PRURL is the pull request's URL (PR mode with an adapter that
	// returns one).
	PRURL string
}

// Hydrate opens the tool root opts.Dir and brings it to the upstream.
//
// When Dir has no .git, a repository is initialised (built aside and
// renamed into place) and the upstream branch is fetched and checked out
// into Dir: this is init + fetch + checkout, not a clone into another
// directory, so that files already in Dir (agentos.json ...) stay where they
// are. Those not in the upstream stay local: never committed unless a
// Persist names them (they are listed in .git/info/exclude); those the
// upstream also has are replaced by the upstream's version (with a
// warning). When the upstream has no such branch yet, an initial empty
// commit creates it.
//
// When Dir has a .git, stale temporary files of a killed writer are
// removed, the upstream is fetched and the working tree fast-forwarded.
// Local commits that were never pushed (a kill between commit and push)
// are replayed on top of the upstream as in Persist and pushed (Direct);
// uncommitted changes to the working tree (files a killed writer left
// unsaved) are kept, and in Direct mode committed under their own commit
// "agentos: recover unsaved <paths>" and pushed, except those Options.Hold
// refuses, which stay uncommitted (see recover.go): IMPORTANT: they are
// never swept into a later Persist of another path. A tracked file missing
// from the working tree is restored.
//
// Then Regenerate is called. Hydrate runs under the tool root's lock, from
// its first step: processes sharing a tool root take turns. Before the
// update it verifies the tool root's object store and repairs damage from
// the upstream (see the package doc). Entries of the upstream's tree that
// are not regular files are never checked out (see Refused), and the
// node-local paths (agentos.json, .agentos/, .git/) are never written.
func Hydrate(ctx context.Context, opts Options) (_ *Repo, err error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	r := &Repo{
		opts:      o,
		log:       o.Logger,
		gitDir:    filepath.Join(o.Dir, ".git"),
		branchRef: plumbing.NewBranchReferenceName(o.Branch),
		trackRef:  plumbing.NewRemoteReferenceName("origin", o.Branch),
		conflicts: map[string]conflictRecord{},
		refused:   map[string]Refusal{},
	}
	defer func() {
		if err != nil && r.sto != nil {
			_ = r.sto.Close()
		}
	}()
	defer recoverInto(&err, r.log, "hydrating "+o.Dir)
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("repo: creating the tool root: %w", err)
	}
	unlock, err := r.lockRoot(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.hydrate(ctx); err != nil {
		return nil, err
	}
	r.remember()
	return r, nil
}

// hydrate is Hydrate under the tool root's lock.
func (r *Repo) hydrate(ctx context.Context) error {
	o := r.opts
	removeStaleInits(o.Dir)
	if fi, err := os.Stat(r.gitDir); errors.Is(err, fs.ErrNotExist) {
		if err := newGitDir(r.gitDir, r.config(), o.Branch); err != nil {
			return fmt.Errorf("repo: initialising %s: %w", r.gitDir, err)
		}
	} else if err != nil {
		return fmt.Errorf("repo: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory (a worktree link is not supported)", ErrOptions, r.gitDir)
	}
	if removed := cleanStale(r.gitDir, 0, true); len(removed) > 0 {
		r.log.Info("git: removed stale files of a killed writer", slog.Any("files", removed))
	}
	if err := r.ensureConfig(); err != nil {
		return err
	}
	r.sto = newStore(r.gitDir, r.log)
	repaired, err := r.checkStore()
	if err != nil {
		return err
	}
	r.recovering = true
	if repaired {
		err = r.repair(ctx, nil)
	} else if err = r.sync(ctx); damaged(err) {
		err = r.repair(ctx, err)
	}
	r.recovering = false
	if err != nil {
		return err
	}
	r.log.Info("git: hydrated", slog.String("dir", o.Dir), slog.String("head", short(r.local)))
	return nil
}

// repair brings a damaged tool root back (see repair.go): verify and
// salvage the store, then sync in repair mode (full fetch, unreadable
// local commits dropped, working files kept). cause is the failure that
// revealed the damage (nil when the verification did).
func (r *Repo) repair(ctx context.Context, cause error) error {
	if cause != nil {
		r.log.Warn("git: the local repository is damaged; repairing it from the upstream", slog.String("err", cause.Error()))
		if _, err := r.checkStore(); err != nil {
			return err
		}
		if err := r.sto.reopen(r.gitDir); err != nil {
			r.log.Warn("git: closing the object store", slog.String("err", err.Error()))
		}
	}
	// The files of the local commits a repair drops stay in the working
	// tree: recovered under their own commit, like a killed writer's.
	r.repairing, r.recovering = true, true
	defer func() { r.repairing, r.recovering = false, false }()
	return r.sync(ctx)
}

// config is the .git/config this package writes.
func (r *Repo) config() *config.Config {
	cfg := config.NewConfig()
	cfg.Core.IsBare = false
	cfg.Remotes["origin"] = &config.RemoteConfig{
		Name:  "origin",
		URLs:  []string{r.opts.Upstream},
		Fetch: []config.RefSpec{config.RefSpec("+refs/heads/*:refs/remotes/origin/*")},
	}
	cfg.Branches[r.opts.Branch] = &config.Branch{Name: r.opts.Branch, Remote: "origin", Merge: r.branchRef}
	return cfg
}

// ensureConfig rewrites .git/config when it is unreadable or names another
// upstream, and HEAD when it does not point at the branch.
func (r *Repo) ensureConfig() error {
	b, err := os.ReadFile(filepath.Join(r.gitDir, "config"))
	ok := false
	if err == nil {
		cfg := config.NewConfig()
		if cfg.Unmarshal(b) == nil {
			if rc := cfg.Remotes["origin"]; rc != nil && len(rc.URLs) == 1 && rc.URLs[0] == r.opts.Upstream {
				ok = true
			}
		}
	}
	if !ok {
		if err := writeConfig(r.gitDir, r.config()); err != nil {
			return fmt.Errorf("repo: writing %s/config: %w", r.gitDir, err)
		}
	}
	head, _ := os.ReadFile(filepath.Join(r.gitDir, "HEAD"))
	if strings.TrimSpace(string(head)) != "ref: "+r.branchRef.String() {
		if err := writeSymRef(r.gitDir, plumbing.HEAD, r.branchRef); err != nil {
			return fmt.Errorf("repo: writing %s/HEAD: %w", r.gitDir, err)
		}
	}
	for _, d := range layout {
		if err := os.MkdirAll(filepath.Join(r.gitDir, filepath.FromSlash(d)), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// saveRefs records r.local and r.upstream on disk (packed-refs, one
// rename), after the objects they reach. The refs on disk are the truth a
// restarted process resumes from.
func (r *Repo) saveRefs() error {
	if err := r.flush(); err != nil {
		return err
	}
	err := writePackedRefs(r.gitDir, map[plumbing.ReferenceName]plumbing.Hash{r.branchRef: r.local, r.trackRef: r.upstream}, !r.looseGone)
	if err == nil {
		r.looseGone = true
	}
	return err
}

// readRef reads one of our refs; a missing, corrupt or dangling ref reads
// as zero.
func (r *Repo) readRef(name plumbing.ReferenceName) plumbing.Hash {
	h, ok := readLooseRef(r.gitDir, name)
	if !ok {
		h, ok = readPackedRefs(r.gitDir)[name]
	}
	if !ok {
		return plumbing.ZeroHash
	}
	if _, err := r.sto.EncodedObject(plumbing.CommitObject, h); err != nil {
		r.log.Warn("git: reference points at a missing commit; ignoring it", slog.String("ref", name.String()), slog.String("commit", h.String()))
		return plumbing.ZeroHash
	}
	return h
}

func (r *Repo) commitTree(h plumbing.Hash) (plumbing.Hash, error) {
	if h.IsZero() {
		return plumbing.ZeroHash, nil
	}
	c, err := object.GetCommit(r.sto, h)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit %s: %w", h, err)
	}
	return c.TreeHash, nil
}

// sync loads the state from disk, fetches, and brings the tool root to the
// upstream (see Hydrate). Called with r.mu held.
func (r *Repo) sync(ctx context.Context) error {
	r.resync = true
	// No checkout ever completed here: no ref, and no index (written after
	// the refs at the end of every sync).
	_, ierr := os.Lstat(filepath.Join(r.gitDir, "index"))
	fresh := !r.refRecorded(r.branchRef) && errors.Is(ierr, fs.ErrNotExist)
	local := r.readRef(r.branchRef)
	track := r.readRef(r.trackRef)
	if r.repairing {
		// Fetch everything the upstream has, not only what is new: a
		// repair lost objects the upstream still holds.
		r.fullFetch = true
		if !track.IsZero() && r.readableHistory(track, plumbing.ZeroHash, 1) != nil {
			track = plumbing.ZeroHash
		}
	}
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
	if r.repairing && !local.IsZero() {
		if err := r.readableHistory(local, track, maxWalk); err != nil {
			r.log.Warn("git: the local commits not yet upstream can no longer be read; they are dropped, and every working file that differs from the upstream is kept and recovered under its own commit",
				slog.String("head", local.String()), slog.String("damage", err.Error()))
			local = plumbing.ZeroHash
		}
	}
	if local.IsZero() && !fresh {
		r.log.Warn("git: the tool root's branch is missing or damaged; checking out the upstream's and keeping every working file that differs from it (recovered under its own commit)",
			slog.String("branch", r.opts.Branch))
	}
	r.loadIndex()
	r.loadLocalOnly()
	r.pending = map[string]bool{}
	r.files = map[string]entry{}
	r.chain = nil
	if local.IsZero() {
		if err := r.firstCheckout(u, fresh); err != nil {
			return err
		}
	} else {
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
	}
	if r.opts.Strategy == Direct {
		if r.recovering {
			if err := r.recoverUnsaved(); err != nil {
				return err
			}
		}
		if len(r.chain) > 0 {
			r.log.Info("git: pushing local commits left unpushed", slog.Int("commits", len(r.chain)))
			_, results, err := r.publish(ctx)
			r.warnConflicts(results)
			if err != nil {
				return err
			}
		}
	}
	if err := r.saveRefs(); err != nil {
		return fmt.Errorf("repo: writing %s/packed-refs: %w", r.gitDir, err)
	}
	if err := r.regenerate(); err != nil {
		return err
	}
	if err := r.writeIndex(); err != nil {
		return fmt.Errorf("repo: writing the index: %w", err)
	}
	r.resync = false
	return nil
}

func (r *Repo) warnConflicts(results []conflictResult) {
	for _, c := range results {
		r.log.Warn("git: a local change conflicted with the upstream; it was pushed to a branch for review",
			slog.String("tool", c.err.Tool), slog.String("branch", c.err.Branch), slog.Any("paths", c.err.Paths))
	}
}

func (r *Repo) regenerate() error {
	if r.opts.Regenerate == nil {
		return nil
	}
	if err := r.opts.Regenerate(); err != nil {
		return fmt.Errorf("repo: regenerating derived files %v: %w", r.opts.Derived, err)
	}
	return nil
}

// createBranch makes the upstream branch with an initial empty commit.
func (r *Repo) createBranch(ctx context.Context) (plumbing.Hash, error) {
	tree, err := writeTree(r.sto, nil)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	c, err := r.writeCommit(tree, plumbing.ZeroHash, "agentos: initial commit", r.signature())
	if err != nil {
		return plumbing.ZeroHash, err
	}
	err = r.push(ctx, r.branchRef, plumbing.ZeroHash, c, []plumbing.Hash{c, tree})
	if errors.Is(err, errStale) { // someone else created it first
		u, ferr := r.fetch(ctx)
		if ferr == nil && !u.IsZero() {
			return u, nil
		}
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	r.log.Info("git: created the upstream branch", slog.String("branch", r.opts.Branch))
	return c, nil
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
	keep := map[string]bool{}
	var localOnly, kept, links []string
	err = r.walkWork("", func(p string, d fs.DirEntry) error {
		e, err := r.workEntry(p, false)
		var le *linkError
		if errors.As(err, &le) {
			links = append(links, p)
			return nil
		}
		if err != nil {
			return err
		}
		uf, inUpstream := ufiles[p]
		switch {
		case r.localOnly[p]:
			keep[p] = inUpstream
		case !inUpstream:
			if fresh && !r.isDerived(p) {
				localOnly = append(localOnly, p)
			} else {
				r.pending[p] = true
			}
		case uf == e:
			keep[p] = true
		case fresh || !r.guarded(p):
			r.log.Warn("git: a file already in the tool root is replaced by the upstream's version", slog.String("path", p))
		default:
			keep[p], r.pending[p] = true, true
			kept = append(kept, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(links) > 0 {
		r.log.Warn("git: symbolic links in the tool root are never committed", slog.Any("paths", links))
	}
	if len(kept) > 0 {
		r.log.Warn("git: kept working files that differ from the upstream (changes of local commits that could not be read); they are recovered under their own commit", slog.Any("paths", kept))
	}
	if len(localOnly) > 0 {
		for _, p := range localOnly {
			r.localOnly[p] = true
		}
		if err := r.saveLocalOnly(); err != nil {
			return fmt.Errorf("repo: recording the local files in %s: %w", excludeFile, err)
		}
		r.log.Info("git: files that were in the tool root before its first checkout and that the upstream does not have stay local (listed in .git/"+excludeFile+"); a write of one of them (write_file, Persist by name) publishes it",
			slog.Int("files", len(localOnly)), slog.Any("paths", firstN(localOnly, 20)))
	}
	r.tree = plumbing.ZeroHash
	r.direct = fresh
	err = r.moveTo(uTree, keep)
	r.direct = false
	if err != nil {
		return err
	}
	r.local, r.upstream = u, u
	return nil
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
	seen := map[string]bool{}
	var links []string
	err := r.walkWork("", func(p string, d fs.DirEntry) error {
		seen[p] = true
		if d.Type()&fs.ModeSymlink != 0 {
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
		}
		if r.localOnly[p] {
			return nil
		}
		f, tracked := r.files[p]
		if tracked {
			if fi, err := d.Info(); err == nil && r.statClean(p, f.hash, fi) {
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
		if e != f {
			if c, ok := r.conflicts[p]; ok && c.entry == e {
				return nil // on a conflict branch; its tool's Persist reports it
			}
			r.pending[p] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(links) > 0 {
		r.log.Warn("git: symbolic links in the tool root are never committed", slog.Any("paths", links))
	}
	for _, p := range sortedKeys(r.files) {
		f := r.files[p]
		if !seen[p] && !r.ignored(p) && safeTreePath(p) {
			if why := checkoutRefusal(f.mode); why != "" {
				r.refuse(p, f, why)
				continue
			}
			r.log.Info("git: restoring a tracked file missing from the tool root", slog.String("path", p))
			if err := r.writeWork(p, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadChain finds the local commits not known to be upstream: those after
// the tracking ref (or after u, or after their merge base with u).
func (r *Repo) loadChain(local, track, u plumbing.Hash) error {
	var commits []*object.Commit
	base := plumbing.ZeroHash
	found := false
	for h, n := local, 0; !h.IsZero() && n < maxWalk; n++ {
		if h == track || h == u {
			base, found = h, true
			break
		}
		c, err := object.GetCommit(r.sto, h)
		if err != nil {
			return err
		}
		commits = append(commits, c)
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	if !found {
		commits = nil
		lc, err := object.GetCommit(r.sto, local)
		if err != nil {
			return err
		}
		uc, err := object.GetCommit(r.sto, u)
		if err != nil {
			return err
		}
		if mbs, err := lc.MergeBase(uc); err == nil && len(mbs) > 0 {
			base = mbs[0].Hash
		}
		for h := local; !h.IsZero() && h != base; {
			c, err := object.GetCommit(r.sto, h)
			if err != nil {
				return err
			}
			commits = append(commits, c)
			if len(c.ParentHashes) == 0 {
				break
			}
			h = c.ParentHashes[0]
		}
	}
	r.upstream = base
	r.chain = nil
	for i := len(commits) - 1; i >= 0; i-- {
		c := commits[i]
		parentTree := plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			t, err := r.commitTree(c.ParentHashes[0])
			if err != nil {
				return err
			}
			parentTree = t
		}
		cs := &changeSet{commit: c.Hash, tree: c.TreeHash, message: c.Message, author: c.Author, changes: map[string]entry{}}
		if err := diffTrees(r.sto, parentTree, c.TreeHash, func(p string, _, to entry) { cs.changes[p] = to }); err != nil {
			return err
		}
		cs.tool = r.toolName(sortedKeys(cs.changes))
		r.chain = append(r.chain, cs)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// conflictResult is one change set that could not be replayed.
type conflictResult struct {
	set    *changeSet
	commit plumbing.Hash // pushed to err.Branch
	err    *ConflictError
}

// rebaseOnto rebuilds the unpushed commits (r.chain) and the uncommitted
// changes (r.pending) on top of the upstream commit u: the working tree is
// reset to u, each commit's files are re-applied, Regenerate rebuilds the
// derived files, and the commit is made again. A commit that changed a path
// the upstream also changed, to different content, is not replayed: it is
// pushed to a conflict branch and reported. On return r.upstream = u.
func (r *Repo) rebaseOnto(ctx context.Context, u plumbing.Hash) ([]conflictResult, error) {
	if u == r.upstream {
		return nil, nil // the chain is already based on u
	}
	r.resync = true
	baseTree, err := r.commitTree(r.upstream)
	if err != nil {
		return nil, err
	}
	uTree, err := r.commitTree(u)
	if err != nil {
		return nil, err
	}
	theirs := map[string]entry{}
	if err := diffTrees(r.sto, baseTree, uTree, func(p string, _, to entry) { theirs[p] = to }); err != nil {
		return nil, err
	}
	clash := func(changes map[string]entry) []string {
		var bad []string
		for p, ours := range changes {
			if t, changed := theirs[p]; changed && t != ours && !r.isDerived(p) {
				bad = append(bad, p)
			}
		}
		sort.Strings(bad)
		return bad
	}

	// 1. Conflicts, published before anything local changes. The local
	// changes are the pending paths and every working file the update
	// would overwrite or delete that no longer holds r.files' content (a
	// tool wrote it and has not persisted it yet).
	var results []conflictResult
	var reset []string // pushed to a conflict branch: take the upstream's
	keep := map[string]bool{}
	pendingChanges := map[string]entry{}
	for _, p := range sortedKeys(r.pending) {
		e, err := r.workEntry(p, true)
		if err != nil {
			return nil, err
		}
		pendingChanges[p] = e
	}
	candidates := map[string]bool{}
	if err := diffTrees(r.sto, r.tree, uTree, func(p string, _, _ entry) { candidates[p] = true }); err != nil {
		return nil, err
	}
	for _, cs := range r.chain {
		for p := range cs.changes {
			candidates[p] = true
		}
	}
	dirty := map[string]entry{}
	for _, p := range sortedKeys(candidates) {
		if r.pending[p] || !r.guarded(p) || !safeTreePath(p) || r.ignored(p) {
			continue
		}
		e, changed, err := r.workDirty(p, r.files[p])
		if err != nil {
			return nil, err
		}
		if changed {
			dirty[p] = e
			keep[p] = true
		}
	}
	if bad := clash(pendingChanges); len(bad) > 0 {
		if r.opts.Strategy == PR {
			// The working tree keeps the local version (still pending); it
			// is pushed for review unless a proposal already holds it.
			var fresh []string
			for _, p := range bad {
				if !r.proposed(p, pendingChanges[p]) {
					fresh = append(fresh, p)
				}
			}
			if len(fresh) > 0 {
				res, err := r.conflictOf(ctx, u, uTree, "uncommitted changes to", fresh, pendingChanges)
				if err != nil {
					return nil, err
				}
				results = append(results, res)
			} else {
				r.log.Warn("git: the upstream changed files this node had proposed; the working tree keeps the proposed version", slog.Any("paths", bad))
			}
		} else {
			for _, p := range bad {
				delete(r.pending, p)
				reset = append(reset, p)
			}
			res, err := r.conflictOf(ctx, u, uTree, "uncommitted changes to", bad, pendingChanges)
			if err != nil {
				return nil, err
			}
			results = append(results, res)
		}
	}
	if bad := clash(dirty); len(bad) > 0 && r.opts.Strategy != PR {
		// Written by a tool that has not persisted it yet: its version is
		// pushed to a conflict branch now, the working tree keeps it, and
		// the tool's Persist of it reports the conflict.
		res, err := r.conflictOf(ctx, u, uTree, "unpersisted changes to", bad, dirty)
		if err != nil {
			return nil, err
		}
		results = append(results, res)
		for _, p := range bad {
			r.conflicts[p] = conflictRecord{entry: dirty[p], commit: res.commit, err: res.err}
		}
	}
	for p := range r.pending {
		keep[p] = true
	}
	var sets []*changeSet
	for _, cs := range r.chain {
		if bad := clash(cs.changes); len(bad) > 0 {
			res, err := r.pushConflict(ctx, u, uTree, cs, bad)
			if err != nil {
				return nil, err
			}
			results = append(results, res)
			continue
		}
		sets = append(sets, cs)
	}

	// 2. Rebuild the commits on u and move the working tree to the result:
	// once, or once per commit when Regenerate must see its files.
	head, tree := u, uTree
	var replayed []*changeSet
	for _, cs := range sets {
		plain := map[string]entry{}
		derived := map[string]entry{}
		for p, e := range cs.changes {
			if r.isDerived(p) {
				derived[p] = e
			} else {
				plain[p] = e
			}
		}
		t1, err := updateTree(r.sto, tree, plain)
		if err != nil {
			return nil, err
		}
		if r.opts.Regenerate != nil {
			if err := r.moveTo(t1, keep); err != nil {
				return nil, err
			}
			if err := r.regenerate(); err != nil {
				return nil, err
			}
			derived = map[string]entry{}
			for _, p := range r.opts.Derived {
				e, err := r.workEntry(p, true)
				if err != nil {
					return nil, err
				}
				derived[p] = e
			}
		}
		t2, err := updateTree(r.sto, t1, derived)
		if err != nil {
			return nil, err
		}
		if r.opts.Regenerate != nil {
			dkeep := map[string]bool{}
			for p := range keep {
				dkeep[p] = true
			}
			for _, p := range r.opts.Derived {
				dkeep[p] = true
			}
			if err := r.moveTo(t2, dkeep); err != nil {
				return nil, err
			}
		}
		if t2 == tree {
			continue // already upstream: no empty commit
		}
		c, err := r.writeCommit(t2, head, cs.message, cs.author)
		if err != nil {
			return nil, err
		}
		cs.commit, cs.tree = c, t2
		replayed = append(replayed, cs)
		head, tree = c, t2
	}
	if err := r.moveTo(tree, keep); err != nil {
		return nil, err
	}
	for _, p := range reset {
		if err := r.resetWork(p); err != nil {
			return nil, err
		}
	}
	r.chain = replayed
	r.upstream, r.local = u, head
	r.resync = false
	return results, nil
}

// pushConflict pushes a change set that clashed with the upstream to a new
// branch "conflict/<tool>-<time>" made from u.
// conflictOf pushes the entries of paths (taken from changes) to a
// conflict branch in one commit whose message says what they are.
func (r *Repo) conflictOf(ctx context.Context, u, uTree plumbing.Hash, what string, paths []string, changes map[string]entry) (conflictResult, error) {
	sub := make(map[string]entry, len(paths))
	for _, p := range paths {
		sub[p] = changes[p]
	}
	cs := &changeSet{message: "agentos: " + what + " " + strings.Join(paths, ", ") + "\n", author: r.signature(), tool: r.toolName(paths), changes: sub}
	return r.pushConflict(ctx, u, uTree, cs, paths)
}

func (r *Repo) pushConflict(ctx context.Context, u, uTree plumbing.Hash, cs *changeSet, bad []string) (conflictResult, error) {
	plain := map[string]entry{}
	for p, e := range cs.changes {
		if !r.isDerived(p) {
			plain[p] = e
		}
	}
	t, err := updateTree(r.sto, uTree, plain)
	if err != nil {
		return conflictResult{}, err
	}
	c, err := r.writeCommit(t, u, cs.message, cs.author)
	if err != nil {
		return conflictResult{}, err
	}
	objs := map[plumbing.Hash]bool{c: true}
	if err := newObjects(r.sto, uTree, t, objs); err != nil {
		return conflictResult{}, err
	}
	branch, err := r.pushNewBranch(ctx, "conflict/"+cs.tool+"-"+r.stamp(), c, objs)
	if err != nil {
		return conflictResult{}, fmt.Errorf("pushing the conflicting version of %s: %w", cs.tool, err)
	}
	return conflictResult{set: cs, commit: c, err: &ConflictError{Tool: cs.tool, Paths: bad, Branch: branch, Base: r.opts.Branch}}, nil
}

// pushNewBranch creates the upstream branch name (or name-2, name-3 ...
// when it exists) at c.
func (r *Repo) pushNewBranch(ctx context.Context, name string, c plumbing.Hash, objs map[plumbing.Hash]bool) (string, error) {
	list := make([]plumbing.Hash, 0, len(objs))
	for h := range objs {
		list = append(list, h)
	}
	var err error
	for i := 1; i <= 20; i++ {
		b := name
		if i > 1 {
			b = fmt.Sprintf("%s-%d", name, i)
		}
		err = r.push(ctx, plumbing.NewBranchReferenceName(b), plumbing.ZeroHash, c, list)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, errStale) {
			return "", err
		}
	}
	return "", err
}

// proposed says whether a proposal branch of the upstream (feat/...,
// conflict/..., as advertised at the last fetch, and made by this node, so
// that its commit is here) holds e at p.
func (r *Repo) proposed(p string, e entry) bool {
	for name, h := range r.remote {
		if !strings.HasPrefix(name, "refs/heads/feat/") && !strings.HasPrefix(name, "refs/heads/conflict/") {
			continue
		}
		c, err := object.GetCommit(r.sto, h)
		if err != nil {
			continue
		}
		t, err := c.Tree()
		if err != nil {
			continue
		}
		te, err := t.FindEntry(p)
		if err == nil && te.Hash == e.hash && te.Mode == e.mode {
			return true
		}
	}
	return false
}

func (r *Repo) stamp() string { return r.opts.Now().UTC().Format("20060102T150405") }

func (r *Repo) signature() object.Signature {
	return object.Signature{Name: r.opts.AuthorName, Email: r.opts.AuthorEmail, When: r.opts.Now()}
}

func (r *Repo) writeCommit(tree, parent plumbing.Hash, msg string, author object.Signature) (plumbing.Hash, error) {
	c := &object.Commit{Author: author, Committer: r.signature(), Message: msg, TreeHash: tree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	o := r.sto.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.sto.SetEncodedObject(o)
}

// toolName names a tool after its first path: tools/math/fib.ts ->
// "math-fib". Derived files are skipped.
func (r *Repo) toolName(paths []string) string {
	for _, p := range paths {
		if !r.isDerived(p) {
			return toolName(p)
		}
	}
	if len(paths) > 0 {
		return toolName(paths[0])
	}
	return "tools"
}

func toolName(p string) string {
	p = strings.TrimPrefix(p, "tools/")
	if ext := filepath.Ext(p); ext != "" && ext != p {
		p = strings.TrimSuffix(p, ext)
	}
	var b strings.Builder
	for _, c := range p {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	for strings.Contains(s, "--") {
		s = strings.ReplaceAll(s, "--", "-")
	}
	if len(s) > 60 {
		s = strings.TrimRight(s[:60], "-")
	}
	if s == "" {
		return "tools"
	}
	return s
}

// Persist commits the current content of paths (plus the Derived files and
// any change Hydrate kept) with message, and publishes it (see Strategy).
// Paths are relative to the tool root; a directory stands for the files
// under it; a missing file is a deletion; ignored paths (.agentos/ ...) are
// skipped. When nothing changed, Persist is a no-op (no empty commit).
//
// Direct: the commit is pushed to Branch. When the push is rejected
// because another writer moved the branch, the upstream is fetched, the
// commit rebuilt on top of it (working tree reset to upstream, our files
// re-applied, Regenerate, commit again) and pushed again, up to
// Options.Retries attempts with a random, growing pause (1-20 ms). If the
// upstream changed one of our paths to different content since our base,
// the error is a *ConflictError (ErrConflict): our version is on branch
// "conflict/<tool>-<time>" and the working tree holds the upstream's.
// A file written but not yet persisted is never overwritten by such a
// rebase: when the upstream changed it too, its version is pushed to a
// conflict branch at once, the working tree keeps it, and the Persist of
// that file returns the *ConflictError (then resets it to the upstream's).
//
// PR: the commit is made on a new branch "feat/<tool>-<time>" from the
// upstream's branch, that branch is pushed (Branch is never written) and
// PR.Open is called with Title "agentos: <message>", Head the branch and
// Base Branch. The working tree keeps the new files. Only paths (and the
// Derived files) are proposed: earlier proposals still in the working tree
// are not bundled in.
func (r *Repo) Persist(ctx context.Context, paths []string, message string) (_ Persisted, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Persisted{}, ErrClosed
	}
	defer func() {
		if errors.Is(err, ErrInternal) {
			r.resync = true // the state may be half-updated: reload it from disk
		}
	}()
	defer recoverInto(&err, r.log, "persisting "+strings.Join(paths, ", "))
	unlock, err := r.lockRoot(ctx)
	if err != nil {
		return Persisted{}, err
	}
	defer unlock()
	defer r.remember()
	r.refresh()
	p, err := r.persist(ctx, paths, message)
	if damaged(err) && ctx.Err() == nil {
		// A missing or unreadable object: repair from the upstream (the
		// working files are kept) and write again.
		if rerr := r.repair(ctx, err); rerr != nil {
			return p, fmt.Errorf("%w (and the repair failed: %v)", err, rerr)
		}
		return r.persist(ctx, paths, message)
	}
	return p, err
}

// persist is Persist under the locks.
func (r *Repo) persist(ctx context.Context, paths []string, message string) (Persisted, error) {
	if strings.TrimSpace(message) == "" {
		message = "agentos: update " + strings.Join(paths, ", ")
	}
	if !strings.HasSuffix(message, "\n") {
		message += "\n"
	}
	var want []string
	for _, p := range paths {
		if filepath.IsAbs(p) {
			rel, err := filepath.Rel(r.opts.Dir, p)
			if err != nil {
				return Persisted{}, fmt.Errorf("%w: %s: %v", ErrPath, p, err)
			}
			p = rel
		}
		c, err := cleanRel(p)
		if err != nil {
			return Persisted{}, fmt.Errorf("%w: %v", ErrPath, err)
		}
		if r.ignored(c) {
			r.log.Debug("git: not committing an ignored path", slog.String("path", c))
			continue
		}
		want = append(want, c)
	}
	if r.resync {
		if err := r.sync(ctx); err != nil {
			return Persisted{}, err
		}
	}
	r.publishLocal(want)
	if r.opts.Strategy == PR {
		return r.persistPR(ctx, want, message)
	}
	return r.persistDirect(ctx, want, message)
}

// publishLocal takes the local files (localOnly) named by paths off the
// list: a Persist that names one publishes it.
func (r *Repo) publishLocal(paths []string) {
	changed := false
	for _, p := range paths {
		for q := range r.localOnly {
			if q == p || strings.HasPrefix(q, p+"/") {
				delete(r.localOnly, q)
				changed = true
			}
		}
	}
	if changed {
		if err := r.saveLocalOnly(); err != nil {
			r.log.Warn("git: updating .git/"+excludeFile, slog.String("err", err.Error()))
		}
	}
}

// collect reads the working-tree content of paths and the Derived files,
// stores new blobs, and returns what differs from r.tree.
func (r *Repo) collect(paths []string) (map[string]entry, error) {
	all := append([]string{}, paths...)
	all = append(all, r.opts.Derived...)
	changes := map[string]entry{}
	seen := map[string]bool{}
	add := func(p string, named bool) error {
		if seen[p] || r.ignored(p) {
			return nil
		}
		seen[p] = true
		e, err := r.workEntry(p, true)
		var le *linkError
		if errors.As(err, &le) {
			if named {
				return fmt.Errorf("%w: %v", ErrPath, err)
			}
			r.log.Warn("git: not committing a symbolic link", slog.String("path", p), slog.String("link", le.link))
			return nil
		}
		if err != nil {
			return fmt.Errorf("repo: reading %s: %w", p, err)
		}
		if e != r.files[p] {
			changes[p] = e
		}
		return nil
	}
	for i, p := range all {
		named := i < len(paths)
		if named && r.linkAt(p, true) != "" {
			if err := add(p, true); err != nil {
				return nil, err
			}
			continue
		}
		fi, err := os.Lstat(r.abs(p))
		if err == nil && fi.IsDir() {
			err := r.walkWork(p, func(q string, _ fs.DirEntry) error { return add(q, false) })
			if err != nil {
				return nil, err
			}
		} else if err := add(p, named); err != nil {
			return nil, err
		}
		// Tracked files under p that are gone from the working tree.
		prefix := p + "/"
		for q := range r.files {
			if strings.HasPrefix(q, prefix) && !seen[q] {
				if _, err := os.Lstat(r.abs(q)); errors.Is(err, fs.ErrNotExist) {
					seen[q] = true
					changes[q] = entry{}
				}
			}
		}
	}
	return changes, nil
}

func (r *Repo) persistDirect(ctx context.Context, paths []string, message string) (Persisted, error) {
	// IMPORTANT: only paths (and the derived files): a file another writer
	// left unsaved (r.pending) is never swept into this commit under this
	// message; Hydrate recovers it under its own (recoverUnsaved).
	changes, err := r.collect(paths)
	if err != nil {
		return Persisted{}, err
	}
	conflict, err := r.takeConflicts(ctx, paths, changes)
	if err != nil {
		return Persisted{}, err
	}
	var mine *changeSet
	if len(changes) > 0 {
		tree, err := updateTree(r.sto, r.tree, changes)
		if err != nil {
			return Persisted{}, err
		}
		if tree != r.tree {
			c, err := r.writeCommit(tree, r.local, message, r.signature())
			if err != nil {
				return Persisted{}, err
			}
			r.local = c
			keep := map[string]bool{}
			for p := range changes {
				keep[p] = true
			}
			if err := r.moveTo(tree, keep); err != nil {
				return Persisted{}, err
			}
			for p := range changes {
				delete(r.pending, p)
			}
			mine = &changeSet{commit: c, tree: tree, message: message, author: r.signature(), tool: r.toolName(paths), changes: changes}
			r.chain = append(r.chain, mine)
		}
	}
	if r.local == r.upstream {
		if conflict != nil {
			return Persisted{Commit: conflict.commit.String(), Branch: conflict.err.Branch}, conflict.err
		}
		return Persisted{Commit: r.local.String(), Branch: r.opts.Branch}, nil
	}
	attempts, results, err := r.publish(ctx)
	var mineErr error
	var out = Persisted{Commit: r.local.String(), Branch: r.opts.Branch, Attempts: attempts}
	if conflict != nil {
		mineErr = conflict.err
		out.Commit, out.Branch = conflict.commit.String(), conflict.err.Branch
	}
	for _, res := range results {
		if res.set == mine {
			mineErr = res.err
			out.Commit, out.Branch = res.commit.String(), res.err.Branch
		} else {
			r.warnConflicts([]conflictResult{res})
		}
	}
	if serr := r.saveRefs(); serr != nil && err == nil {
		err = fmt.Errorf("repo: writing %s/packed-refs: %w", r.gitDir, serr)
	}
	if err != nil {
		return out, err
	}
	if mineErr != nil {
		return out, mineErr
	}
	r.log.Info("git: persisted", slog.String("commit", short(r.local)), slog.Int("attempts", attempts), slog.String("tool", r.toolName(paths)))
	return out, nil
}

// takeConflicts removes from changes the paths a rebase kept although they
// clash with the upstream (r.conflicts): their version goes to a conflict
// branch (the one the rebase pushed, unless the file changed since), the
// working file is reset to the upstream's version. It returns the conflict
// of a path among paths (what the caller asked to persist), if any; the
// others are logged.
func (r *Repo) takeConflicts(ctx context.Context, paths []string, changes map[string]entry) (*conflictResult, error) {
	var stale []string
	for p := range changes {
		if _, ok := r.conflicts[p]; ok {
			stale = append(stale, p)
		}
	}
	if len(stale) == 0 {
		return nil, nil
	}
	sort.Strings(stale)
	asked := func(p string) bool {
		for _, q := range paths {
			if p == q || strings.HasPrefix(p, q+"/") {
				return true
			}
		}
		return false
	}
	var mine *conflictResult
	var fresh []string
	for _, p := range stale {
		c := r.conflicts[p]
		if changes[p] == c.entry {
			res := conflictResult{commit: c.commit, err: c.err}
			if asked(p) {
				if mine == nil {
					mine = &res
				}
			} else {
				r.warnConflicts([]conflictResult{res})
			}
		} else {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) > 0 {
		// Rewritten since: still based on the old version.
		upTree, err := r.commitTree(r.upstream)
		if err != nil {
			return nil, err
		}
		res, err := r.conflictOf(ctx, r.upstream, upTree, "changes to", fresh, changes)
		if err != nil {
			return nil, err
		}
		if asked(fresh[0]) && mine == nil {
			mine = &res
		} else {
			r.warnConflicts([]conflictResult{res})
		}
	}
	for _, p := range stale {
		delete(changes, p)
		delete(r.conflicts, p)
		delete(r.pending, p)
		if err := r.resetWork(p); err != nil {
			return nil, err
		}
	}
	return mine, nil
}

// publish pushes r.local to the upstream branch, rebasing on rejection.
//
// A local upstream (path, file://) is written in turns: publish holds an
// exclusive flock on the upstream's refs/ directory from the first push to
// the last, so writers using this package never reject each other there
// (the receive-pack's own flock, on the repository directory, still guards
// every reference update). Over HTTPS there is no such lock: rejected
// pushes are retried after a random pause growing from 1-4 ms to 1-20 ms.
func (r *Repo) publish(ctx context.Context) (attempts int, results []conflictResult, err error) {
	if !isRemote(r.opts.Upstream) {
		if dir, err := resolveGitDir(r.opts.Upstream); err == nil {
			unlock, err := lockDirCtx(ctx, filepath.Join(dir, "refs"))
			if err != nil {
				return 0, nil, err
			}
			defer unlock()
		}
	}
	for attempts = 1; ; attempts++ {
		objs, err := r.chainObjects()
		if err != nil {
			return attempts, results, err
		}
		perr := r.push(ctx, r.branchRef, r.upstream, r.local, objs)
		if perr == nil {
			r.upstream = r.local
			r.chain = nil
			return attempts, results, nil
		}
		if attempts >= r.opts.Retries {
			return attempts, results, fmt.Errorf("%w: %d attempts, other writers kept moving %s; the commit is kept locally and pushed by the next Persist or Hydrate; raise Options.Retries if this is frequent",
				ErrRejected, attempts, r.opts.Branch)
		}
		// Pause before fetching, not after: the fresher the fetch, the
		// smaller the window in which another writer can move the branch.
		if errors.Is(perr, errStale) {
			if err := sleep(ctx, jitter(attempts)); err != nil {
				return attempts, results, err
			}
		}
		u, ferr := r.fetch(ctx)
		if ferr != nil || u == r.upstream || u.IsZero() {
			// Not a race with another writer: the upstream failed.
			return attempts, results, fmt.Errorf("%w (the commit is kept locally and pushed by the next Persist or Hydrate)", perr)
		}
		res, err := r.rebaseOnto(ctx, u)
		if err != nil {
			return attempts, results, err
		}
		results = append(results, res...)
		if r.local == r.upstream {
			return attempts, results, nil
		}
	}
}

// jitter is the random pause before push attempt n+1: 1 ms up to a bound
// growing from 4 to 20 ms.
func jitter(n int) time.Duration {
	return time.Duration(1+rand.IntN(min(20, 2*n+2))) * time.Millisecond
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// chainObjects lists the objects of the unpushed commits.
func (r *Repo) chainObjects() ([]plumbing.Hash, error) {
	set := map[plumbing.Hash]bool{}
	prev, err := r.commitTree(r.upstream)
	if err != nil {
		return nil, err
	}
	for _, cs := range r.chain {
		set[cs.commit] = true
		if err := newObjects(r.sto, prev, cs.tree, set); err != nil {
			return nil, err
		}
		prev = cs.tree
	}
	out := make([]plumbing.Hash, 0, len(set))
	for h := range set {
		out = append(out, h)
	}
	return out, nil
}

func (r *Repo) persistPR(ctx context.Context, paths []string, message string) (Persisted, error) {
	u, err := r.fetch(ctx)
	if err != nil {
		return Persisted{}, err
	}
	if !u.IsZero() && u != r.upstream {
		results, err := r.rebaseOnto(ctx, u)
		if err != nil {
			return Persisted{}, err
		}
		r.warnConflicts(results)
		if err := r.saveRefs(); err != nil {
			return Persisted{}, err
		}
		if err := r.regenerate(); err != nil {
			return Persisted{}, err
		}
	}
	// Only the given paths (and the derived files): earlier proposals still
	// in the working tree are not bundled into this one.
	changes, err := r.collect(paths)
	if err != nil {
		return Persisted{}, err
	}
	tree, err := updateTree(r.sto, r.tree, changes)
	if err != nil {
		return Persisted{}, err
	}
	if tree == r.tree {
		return Persisted{Commit: r.local.String(), Branch: r.opts.Branch}, nil
	}
	c, err := r.writeCommit(tree, r.upstream, message, r.signature())
	if err != nil {
		return Persisted{}, err
	}
	upTree, err := r.commitTree(r.upstream)
	if err != nil {
		return Persisted{}, err
	}
	objs := map[plumbing.Hash]bool{c: true}
	if err := newObjects(r.sto, upTree, tree, objs); err != nil {
		return Persisted{}, err
	}
	tool := r.toolName(paths)
	branch, err := r.pushNewBranch(ctx, "feat/"+tool+"-"+r.stamp(), c, objs)
	if err != nil {
		return Persisted{}, err
	}
	for p := range changes {
		delete(r.pending, p)
	}
	if err := r.flush(); err != nil {
		return Persisted{}, err
	}
	out := Persisted{Commit: c.String(), Branch: branch, Attempts: 1}
	r.log.Info("git: pushed a branch for review", slog.String("branch", branch), slog.String("tool", tool))
	var files []string
	for _, p := range sortedKeys(changes) {
		files = append(files, "- "+p)
	}
	url, err := r.opts.PR.Open(ctx, PullRequest{
		Title: "agentos: " + strings.TrimSpace(message),
		Head:  branch,
		Base:  r.opts.Branch,
		Body:  "Forged by agentos.\n\n" + strings.TrimSpace(message) + "\n\nCommit " + c.String() + "\n\n" + strings.Join(files, "\n") + "\n",
	})
	if err != nil {
		if !errors.Is(err, ErrPullRequest) {
			err = fmt.Errorf("%w: %v", ErrPullRequest, err)
		}
		return out, fmt.Errorf("%w (branch %s is pushed: open the pull request by hand)", err, branch)
	}
	out.PRURL = url
	return out, nil
}

// Head returns the current commit hash of the tool root's branch.
func (r *Repo) Head() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", ErrClosed
	}
	return r.local.String(), nil
}

// Close writes .git/index (so that `git status` in the tool root is right;
// it is also written by Hydrate) and releases the repository's files.
// Persist and Head fail afterwards with ErrClosed; Close is idempotent.
func (r *Repo) Close() (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	defer func() {
		if cerr := r.sto.Close(); err == nil {
			err = cerr
		}
	}()
	defer recoverInto(&err, r.log, "closing "+r.opts.Dir)
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	defer cancel()
	unlock, err := r.lockRoot(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if r.diskState() != r.seen {
		// Another process wrote the tool root since: our index would be
		// stale. Only our unflushed objects (none after a completed
		// operation) are written.
		return r.sto.flush()
	}
	err = r.flush()
	if !r.resync {
		err = errors.Join(err, r.writeIndex())
	}
	return err
}
