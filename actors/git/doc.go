// Package git is the git actor: the one writer of a node's tool tree, and
// its persistence to a shared Git upstream (package repo, go-git in
// process).
//
// # Protocol
//
// WriteFile and PatchFile (messages.go) are answered with *Written. The
// actor handles one message at a time, so a node's writes to its working
// tree never interleave. A write is: the file written atomically through the
// jail; Options.OnWrite (the registry, which updates meta.json); then, with
// a Repo, a commit naming the tool and the configured author, pushed to the
// shared branch (direct strategy; a rejected push is rebased on the new
// upstream and retried) or to a review branch (pr strategy).
//
// IMPORTANT: with a Repo, a tool source (.ts, .js) that does not compile
// (esbuild, see Compiles) is written to the working tree only: it is not
// registered, committed or pushed, and the reply's Err (ErrNotCompiled)
// says so, with the diagnostics; the write that makes it compile persists
// it. Code that does not compile never reaches the shared upstream.
//
// # Lifecycle
//
// Props(opts) builds the actor; it keeps no state between messages, so a
// restart loses nothing. The Repo belongs to the caller, who closes it
// after the actor stops.
//
// # Failure
//
// A refused write (a path outside the tool root, a search text not found)
// replies with Written.Err and leaves the file as it was. A write that
// reached the working tree but could not be persisted replies with the
// file written and Err saying why; when another writer changed the same
// tool first, Err wraps repo.ErrConflict and names the branch that keeps
// this version: nothing is lost silently.
package git
