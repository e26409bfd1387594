package repo

// Fencing a forge's commits: a commit made for a forge run carries the run
// and the fencing token its holder claimed it with (FenceTrailer); a
// commit whose token is older than one the upstream already holds for the
// same run never reaches the upstream.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Trailer keys of a fenced commit's message.
const (
	trailerRun   = "Agentos-Run: "
	trailerFence = "Agentos-Fence: "
)

// fenceScan bounds how many upstream commits (newest first) are read to
// find a newer commit of a run: a run's commits are recent.
const fenceScan = 1000

// FenceTrailer returns the trailer to end a commit message with when the
// commit is made for run, held with the fencing token fence (a number that
// only grows, taken with the run's claim: journal.Run.Fence).
//
// IMPORTANT: Persist then refuses (ErrFenced) to publish that commit when
// the upstream history holds a commit of the same run with a greater
// token: the check is made before every push attempt, and a push is a
// compare-and-swap of the branch (a moved branch rejects it, and the check
// is made again on the new head), so a stale holder's commit never lands.
func FenceTrailer(run string, fence int64) string {
	return fmt.Sprintf("\n\n%s%s\n%s%d\n", trailerRun, run, trailerFence, fence)
}

// fenceOf reads the run and token of a fenced commit's message.
func fenceOf(msg string) (run string, fence int64, ok bool) {
	for _, line := range strings.Split(msg, "\n") {
		if v, found := strings.CutPrefix(line, trailerRun); found {
			run = strings.TrimSpace(v)
		} else if v, found := strings.CutPrefix(line, trailerFence); found {
			fence, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return run, fence, run != "" && fence > 0
}

// fencedOut reports whether the upstream history from head holds a commit
// of cs's run with a greater token than cs's (false for an unfenced cs).
func (r *Repo) fencedOut(head plumbing.Hash, cs *changeSet) bool {
	run, fence, ok := fenceOf(cs.message)
	if !ok {
		return false
	}
	h := head
	for range fenceScan {
		if h.IsZero() {
			return false
		}
		c, err := object.GetCommit(r.sto, h)
		if err != nil {
			return false // a shallow history ends here
		}
		if theirs, tf, ok := fenceOf(c.Message); ok && theirs == run && tf > fence {
			return true
		}
		if len(c.ParentHashes) == 0 {
			return false
		}
		h = c.ParentHashes[0]
	}
	return false
}

// staleInChain reports whether an unpushed commit is fenced out by the
// upstream history from head.
func (r *Repo) staleInChain(head plumbing.Hash) bool {
	for _, cs := range r.chain {
		if r.fencedOut(head, cs) {
			return true
		}
	}
	return false
}
