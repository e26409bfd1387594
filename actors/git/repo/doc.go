// Package repo keeps a tool root in Git: it hydrates the working tree from
// an upstream repository and persists tools back to it, with go-git, in
// process. It is the library under the git actor; it knows nothing of
// actors.
//
// # Protocol
//
// Hydrate(ctx, Options) opens a tool root and brings it to the upstream's
// branch (clone into a directory that may already hold files, or fetch and
// fast-forward; a first clone fetches the head and its tree only, depth 1,
// and the history later only if something asks for it: see shallow.go);
// then Repo.Persist(ctx, paths, message) commits the current
// content of paths (plus the Derived files) and publishes it:
//
//   - Direct (default): push to the branch. A push rejected because another
//     writer moved the branch is fetched, rebuilt on the new head (working
//     tree reset to upstream, our files re-applied, Regenerate, commit
//     again) and retried: the history stays linear, nothing is lost. When
//     the other writer changed one of our paths to different content, the
//     later writer gets a *ConflictError (ErrConflict) naming the branch
//     "conflict/<tool>-<time>" that holds its version; the branch keeps the
//     first version and so does the working tree.
//   - PR (gatekeeper mode): commit the given paths (and the Derived files)
//     on "feat/<tool>-<time>" made from the upstream branch, push that
//     branch only, and open a pull request through a PRAdapter (GitHubPR:
//     the GitHub REST API). Local changes that clash with the upstream
//     stay in the working tree (pushed to a conflict branch unless a
//     proposal already holds them).
//
// Rebases never overwrite a working file a tool wrote and has not
// persisted yet.
//
// Derived files (meta.json) are never merged: after every update from
// upstream they are rebuilt by Options.Regenerate, so the published
// meta.json is always what Regenerate makes of the published tree.
//
// A Persist that changes nothing makes no commit, and a Persist commits
// the paths it names plus the Derived files, nothing else (IMPORTANT):
// files that were in the tool root before its first checkout stay local
// until a Persist names them, and files a killed writer left uncommitted
// are committed by the next Hydrate under their own commit, "agentos:
// recover unsaved <paths>" (recover.go), never inside another write's.
//
// Trust (see checkout.go): the upstream is shared, so nothing from it may
// reach beyond the tools. Only regular files are checked out: symbolic
// links, submodules and other modes are refused (logged, listed by
// Refused), and nothing is written or deleted through a linked directory.
// The node-local paths .git/, .agentos/ (journal, databases, sockets) and
// agentos.json (the node's security configuration) are never written from
// the upstream and never committed; links are never committed.
//
// # Lifecycle
//
// InitBare creates an upstream (agentos init). Hydrate returns a *Repo;
// Close releases it (and writes .git/index for `git status`). A Repo is safe
// for concurrent use: one operation runs at a time. Several processes may
// share a tool root: Hydrate, Persist and Close take turns under an flock
// on the tool root (lock.go), and a Repo reloads its state when another
// process changed the root. Several processes and nodes may share an
// upstream.
//
// Transports: a local path or file:// URL is served in process (see
// InstallTransport in transport.go: Hydrate, InitBare, Behind and every
// fetch or push install, once and process-wide, an in-process "file"
// transport in go-git, replacing go-git's default, which executes
// git-upload-pack / git-receive-pack). The git binary is never run. An
// https:// upstream authenticates with the token in the environment
// variable Options.TokenEnv (HTTP basic auth, user "x-access-token"); the
// token is never logged, put in an error, or committed.
//
// # Failure
//
// Crash safety: every file this package writes in .git (refs, kept in
// packed-refs; the index; the config) and in the working tree is written to
// a temporary file and renamed into place; objects are written by go-git
// the same way. No "*.lock" file is ever created, so none can be left
// behind by a kill; Hydrate removes the temporary files and stale locks a
// killed writer left (under the tool root's lock, so no other writer of
// ours is at work).
//
// Damage: Hydrate verifies the object store (Verify) and repairs it from
// the upstream without losing local work (repair.go): readable objects of
// a damaged pack are salvaged, the damaged files are moved to
// .git/corrupt/, the upstream is fetched in full, and local commits that
// cannot be read any more are dropped while their files stay in the
// working tree (recovered under their own commit, see recover.go). The
// same repair runs when an update fails on a missing or unreadable object.
//
// Panics: no panic from Git work (go-git's or this package's) leaves the
// package: the exported functions and every goroutine the package starts
// recover it, log its stack and return ErrInternal; the Repo reloads its
// state from disk at the next call. go-git's filesystem storage is not
// safe for concurrent reads, and go-git reads it from several goroutines
// when it searches deltas: the store serializes every read (store.go).
// The refs on disk are only moved once a step is complete: a process
// killed at any point restarts from a consistent state. Local commits that
// were never pushed are replayed and pushed by the next Hydrate;
// uncommitted changes in the working tree are kept and committed by the
// next Hydrate under their own commit (those Options.Hold refuses stay
// uncommitted).
//
// A local upstream is written under an exclusive flock (released by the
// kernel when a process dies): each push compares the branch with the
// value its writer saw (compare-and-swap) and writers take turns, so they
// never starve each other. Over HTTPS a rejected push is retried with a
// random, growing pause, up to Options.Retries attempts (ErrRejected; the
// commit is kept and pushed later).
//
// Errors wrap the sentinels of errors.go: ErrOptions, ErrPath, ErrConflict,
// ErrRejected, ErrUpstream, ErrPullRequest, ErrClosed, ErrInternal.
package repo
