package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
)

// Files a killed writer left unsaved.
//
// A write is two steps: the file reaches the working tree, then Persist
// commits it. A writer killed in between leaves a working file that
// differs from the tree (r.pending, found by scanDirty at Hydrate); so
// does a file edited by hand. Only the files a write recorded its intent
// for (Intend, with the very content found) are recovered: see intent.go.
// IMPORTANT: such a file MUST NOT be swept into the next, unrelated
// Persist (it would be published under another tool's message, and a
// write publishes exactly its own tool plus the derived files). Hydrate
// (Direct) commits the recoverable ones (an intent names them, and Hold
// accepts them) under their own commit, "agentos:
// recover unsaved <paths>", and pushes it with the other unpushed commits:
// nothing is lost and the history says what happened. A file Options.Hold
// refuses (a tool that does not compile) stays in the working tree,
// uncommitted, and is reported at Warn; the write that fixes it persists
// it. In PR mode the files stay in the working tree (a review branch is
// proposed per write, never for leftovers).

// recoverMessage is the subject of a recovery commit.
const recoverMessage = "agentos: recover unsaved "

// recoverUnsaved commits the pending files (minus the held ones) and the
// derived files rebuilt from them, on r.local, as one change set of r.chain.
// Called by sync (Hydrate, Direct) with r.mu and the root lock held.
func (r *Repo) recoverUnsaved() error {
	paths := r.unsavedWrites()
	defer r.dropSettledIntents()
	if len(paths) == 0 {
		return nil
	}
	// The derived files must describe the recovered files too.
	if err := r.regenerate(); err != nil {
		return err
	}
	changes, err := r.collect(paths)
	if err != nil {
		return err
	}
	tree, err := updateTree(r.sto, r.tree, changes)
	if err != nil {
		return err
	}
	if tree == r.tree {
		return nil
	}
	msg := recoverMessage + strings.Join(firstN(paths, 10), ", ") + "\n\n" +
		"A writer stopped between writing these files and committing them;\n" +
		"they were recovered from the working tree at the next start:\n\n- " +
		strings.Join(paths, "\n- ") + "\n"
	c, err := r.writeCommit(tree, r.local, msg, r.signature())
	if err != nil {
		return fmt.Errorf("repo: committing the recovered files: %w", err)
	}
	r.derivedTaken()
	if _, err := r.adoptLocal(c, tree, changes, msg, r.toolName(paths)); err != nil {
		return err
	}
	r.log.Warn("git: committed files a stopped writer left unsaved, under their own commit", slog.Any("paths", firstN(paths, 20)), slog.String("commit", short(c)))
	return nil
}

// unsavedWrites returns the pending files an agentos write left
// uncommitted and that may be recovered: not derived, local-only or
// ignored (those are no longer pending), not on a conflict branch, still
// holding what the write intended, and not held.
func (r *Repo) unsavedWrites() []string {
	var paths []string
	for _, p := range sortedKeys(r.pending) {
		if r.isDerived(p) || r.localOnly[p] || r.ignored(p) {
			delete(r.pending, p)
			continue
		}
		if _, conflicted := r.conflicts[p]; conflicted {
			continue // on a conflict branch already; its Persist reports it
		}
		if r.recoverable(p) {
			paths = append(paths, p)
		}
	}
	return paths
}

// recoverable says whether the pending file p holds what an agentos write
// under way intended and is not held (see Options.Hold); it warns about
// the other readable ones, which stay uncommitted.
func (r *Repo) recoverable(p string) bool {
	b, err := os.ReadFile(r.abs(p))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false // unreadable: left as it is
	}
	if err != nil || !r.intended(p, b) { // a deletion is never a write's
		// Not what a write under way left: changed by hand (or by
		// anything but agentos), it is never committed for its author.
		r.log.Warn("git: a file differs from the last commit but no agentos write of it was under way: left in the working tree, uncommitted (commit it yourself, or write it through agentos: agentos check, then write_file)", slog.String("path", p))
		return false
	}
	if r.opts.Hold == nil {
		return true
	}
	if why := r.opts.Hold(p, b); why != nil {
		r.log.Warn("git: a file left unsaved stays local, uncommitted, until it is written again: "+why.Error(), slog.String("path", p))
		return false
	}
	return true
}
