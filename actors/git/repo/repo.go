package repo

// The Repo type and its state; Head and Close. The operations live in
// hydrate.go, sync.go, persist.go, publish.go, rebase.go and conflict.go.

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Repo is a tool root kept in sync with its upstream. It is safe for
// concurrent use: one operation runs at a time.
type Repo struct {
	mu sync.Mutex
	// walk is what this sync's scanDirty lstat'ed, kept up to date by the
	// update's writes, and walkSkipped what it skipped, for
	// Options.Walked (nil when not wanted, or given already: walkGiven).
	walk        map[string]fs.FileInfo
	walkSkipped []string
	walkGiven   bool
	opts        Options
	log         *slog.Logger
	gitDir      string
	sto         *store
	closed      bool
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
	// derivedDirty are the Derived files Derive reported changed that no
	// commit has taken yet (persist.go).
	derivedDirty map[string]bool
	idx          map[string]index.Entry
	// checkoutStat is the stat data of the files a fresh checkout wrote
	// itself (r.direct) within racyWindow of now, which idx keeps without
	// (this process does not trust them): writeIndex gives them to the
	// index, as git's checkout does, so that the next Hydrate does not read
	// every file again (see recordStat).
	checkoutStat map[string]index.Entry
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
	// shallow are the commits whose parents were never fetched (a depth-1
	// first checkout, see shallow.go); nil when the history is complete.
	shallow map[plumbing.Hash]bool
	// syncs counts completed syncs; asked are the commits Contains did not
	// hold, with the sync count when first asked about (missingBeyond).
	syncs int
	asked map[plumbing.Hash]int
	// published is the head a sync pushed (local commits left unpushed),
	// for Pull to report; zero when it pushed nothing.
	published plumbing.Hash
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
