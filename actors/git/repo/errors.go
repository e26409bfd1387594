package repo

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of package repo. Every error a caller sees wraps one of them (test
// with errors.Is) and says what was wrong and what to do. IMPORTANT: no error
// ever contains the HTTPS token (see Options.TokenEnv).
var (
	// ErrOptions: Options are missing a required field or hold an invalid
	// value (no Dir, no Upstream, an unknown Strategy, a URL with
	// credentials in it ...).
	ErrOptions = errors.New("repo: invalid options")

	// ErrPath: a path given to Persist leaves the tool root or names .git.
	ErrPath = errors.New("repo: invalid path")

	// ErrConflict: Persist (or Hydrate, replaying local commits) found that
	// a path it changed was also changed upstream, to different content,
	// since the version it was based on. The error is a *ConflictError that
	// names the tool and the branch "conflict/<tool>-<time>" where this
	// version was pushed; the working tree holds upstream's version.
	ErrConflict = errors.New("repo: conflicting change upstream")

	// ErrRejected: the upstream kept rejecting the push (other writers kept
	// moving the branch) for Options.Retries attempts. The commit is kept
	// locally and pushed by the next Persist or Hydrate.
	ErrRejected = errors.New("repo: push rejected")

	// ErrUpstream: the upstream could not be read or written (unreachable,
	// not a repository, authentication failed ...).
	ErrUpstream = errors.New("repo: upstream failed")

	// ErrPullRequest: in PR mode the branch was pushed but the gatekeeper
	// adapter could not open the pull request.
	ErrPullRequest = errors.New("repo: pull request not opened")

	// ErrFenced: the commit was made for a forge run (FenceTrailer) whose
	// holder's fencing token is stale: the upstream holds a commit of the
	// same run made with a greater token (another node took the run over
	// and committed its tool). The commit was dropped, never pushed; the
	// working tree holds the upstream's version.
	ErrFenced = errors.New("repo: the commit's fencing token is stale")

	// ErrClosed: the Repo was closed.
	ErrClosed = errors.New("repo: closed")

	// ErrInternal: Git work panicked (a bug in go-git or in this package).
	// The panic was recovered and its stack logged; the operation was
	// aborted and the Repo reloads its state from disk at the next call.
	// Nothing a completed step wrote is lost. Report it with the log.
	ErrInternal = errors.New("repo: internal error in Git work")
)

// ConflictError is the error Persist returns when a tool it wrote was
// changed concurrently upstream to different content. errors.Is(err,
// ErrConflict) holds.
type ConflictError struct {
	// Tool is the tool's name, e.g. "math-fib" for tools/math/fib.ts.
	Tool string
	// Paths are the conflicting paths.
	Paths []string
	// Branch is where this writer's version was pushed,
	// "conflict/<tool>-<yyyymmddThhmmss>".
	Branch string
	// Base is the branch that keeps the other writer's version ("main").
	Base string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%v: tool %s (%s) was changed upstream by another writer since this node read it; "+
		"this version was pushed to branch %s and %s keeps the other version: merge %s by hand, or read the tool again and rewrite it",
		ErrConflict, e.Tool, strings.Join(e.Paths, ", "), e.Branch, e.Base, e.Branch)
}

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }
