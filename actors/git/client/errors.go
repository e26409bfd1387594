package client

import "errors"

// Errors of the git actor (package git returns them, its replies carry
// them across the wire as Failure codes: FailureOf), wrapped with the path
// and what to do; test with errors.Is. They name no layer: the caller names
// the operation (the kernel tool prefixes "patch_file: "), so a message
// never says "patch_file: git: ...".
var (
	// ErrSearchNotFound: PatchFile's search text does not occur in the file.
	ErrSearchNotFound = errors.New("search text not found")
	// ErrEmptySearch: PatchFile was given an empty search text.
	ErrEmptySearch = errors.New("empty search text")
	// ErrNotCompiled: a written tool source does not compile; it was
	// written to the working tree only, not registered, committed or
	// pushed (see git.Compiles).
	ErrNotCompiled = errors.New("the tool does not compile")
	// ErrUnavailable: a Client request got no answer from the git actor
	// (stopped, timed out, the ctx ended) or an unexpected one. The write
	// may or may not have happened: read the file to know.
	ErrUnavailable = errors.New("the git actor did not answer")
	// ErrNoRepo: Announce or WaitFor reached a git actor without a Repo
	// (tools are not kept in Git on this node).
	ErrNoRepo = errors.New("this node keeps its tools in no Git repository")
	// ErrBadCommit: Announce or WaitFor named something that is not a
	// commit hash (40 hexadecimal digits).
	ErrBadCommit = errors.New("not a commit hash")
	// ErrCommitNotReached: the tool root did not come to include the
	// commit within the bound (Announce: git.Options.SyncTimeout of pulling;
	// WaitFor: its timeout), or the commit is on another branch. The error
	// says what the last pull met.
	ErrCommitNotReached = errors.New("the tool root does not include the commit")
)

// ErrProtected: a write named a file of the node's own policy or state
// (git.Protected): agentos.json, .agentos/ or .git anywhere, which no write
// through the git actor may change, or personas/, which only the node
// itself writes (agentos persona save). Nothing was written.
var ErrProtected = errors.New("the node's policy and state are not written by processes or other nodes")
