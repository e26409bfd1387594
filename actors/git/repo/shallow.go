package repo

// Shallow first checkouts. A fresh tool root needs the upstream's tree,
// not its history: its first fetch asks for depth 1 (when the upstream
// supports it), so that the cost of a first boot follows the size of the
// tree, not the number of commits. The commits whose parents were not
// fetched (the shallow boundary) are listed in .git/shallow, git's own
// format (one hash a line), so the git binary reads the tool root too.
//
// IMPORTANT: every walk of the history stops at a shallow commit (its
// parents are absent by design, not damage): loadChain, readableHistory,
// Contains and Verify's connectivity check. A walk that needs what lies
// beyond the boundary (Contains asked about a commit this tool root never
// fetched; a merge base with a rewritten upstream) makes the next fetch a
// full one (fullFetch), after which the boundary is dropped: the history
// is fetched at most once, and only when something asks for it.

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
)

// shallowFile is the file, in the git directory, listing the shallow
// commits.
const shallowFile = "shallow"

// readShallow reads the shallow commits of the git directory gitDir (nil
// when it is complete). Lines that are not hashes are skipped.
func readShallow(gitDir string) map[plumbing.Hash]bool {
	b, err := os.ReadFile(filepath.Join(gitDir, shallowFile))
	if err != nil {
		return nil
	}
	var out map[plumbing.Hash]bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 40 && plumbing.IsHash(string(line)) {
			if out == nil {
				out = map[plumbing.Hash]bool{}
			}
			out[plumbing.NewHash(string(line))] = true
		}
	}
	return out
}

// writeShallow records the shallow commits (atomically); an empty set
// removes the file.
func writeShallow(gitDir string, shallow map[plumbing.Hash]bool) error {
	p := filepath.Join(gitDir, shallowFile)
	if len(shallow) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	hs := make([]string, 0, len(shallow))
	for h := range shallow {
		hs = append(hs, h.String())
	}
	sort.Strings(hs)
	var b bytes.Buffer
	for _, h := range hs {
		b.WriteString(h)
		b.WriteByte('\n')
	}
	return atomicWrite(gitDir, p, b.Bytes(), 0o644)
}

// isShallow says whether the history walk must stop at commit h: its
// parents were never fetched.
func (r *Repo) isShallow(h plumbing.Hash) bool { return r.shallow[h] }

// wantShallow says whether the next fetch may be of depth 1: nothing is
// checked out (no local branch, no tracking ref) and no full fetch was
// asked for.
func (r *Repo) wantShallow() bool {
	return !r.fullFetch && !r.opts.FullHistory && r.local.IsZero() && r.upstream.IsZero()
}

// recordShallow adds the boundary a depth-1 fetch reported.
func (r *Repo) recordShallow(hs []plumbing.Hash) error {
	if len(hs) == 0 {
		return nil
	}
	next := map[plumbing.Hash]bool{}
	for h := range r.shallow {
		next[h] = true
	}
	for _, h := range hs {
		next[h] = true
	}
	if err := writeShallow(r.gitDir, next); err != nil {
		return err
	}
	r.shallow = next
	return nil
}

// dropShallow forgets the boundary after a full fetch brought the history.
func (r *Repo) dropShallow() error {
	if len(r.shallow) == 0 {
		if _, err := os.Lstat(filepath.Join(r.gitDir, shallowFile)); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	if err := writeShallow(r.gitDir, nil); err != nil {
		return err
	}
	r.shallow = nil
	return nil
}

// missingBeyond is Contains' answer to a commit it does not hold. A
// commit not fetched yet is normally new (the next Pull brings it); but in
// a shallow tool root it may be older than the boundary. When it is still
// missing after a sync since it was first asked about, the next fetch is
// a full one (the history comes once, and only when asked for).
func (r *Repo) missingBeyond(h plumbing.Hash) {
	if len(r.shallow) == 0 {
		return
	}
	if r.asked == nil {
		r.asked = map[plumbing.Hash]int{}
	}
	at, ok := r.asked[h]
	switch {
	case !ok:
		if len(r.asked) >= 1024 {
			clear(r.asked)
		}
		r.asked[h] = r.syncs
	case r.syncs > at:
		r.fullFetch = true
		delete(r.asked, h)
	}
}
