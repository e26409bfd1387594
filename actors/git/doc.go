// Package git is the git actor: the one writer of a node's tool tree, and
// its persistence to a shared Git upstream (package repo, go-git in
// process).
//
// # Protocol
//
// WriteFile and PatchFile (protobuf, gitpb/git.proto; messages.go lists
// them) are answered with Written. Every one can cross a node. Callers
// outside this package MUST use the typed client, gitclient.Client
// (actors/git/client, which also holds the actor's errors): WriteFile and
// PatchFile return (Written, error), the reply's Failure{code, message}
// mapped back to the sentinel errors (errors.Is works). The actor handles
// one message at a time, so a node's writes to its working tree never
// interleave. A write is: the file written atomically through the jail;
// Register sent to the registry actor (Options.Registry, a regclient.Client;
// the registry updates meta.json; a file that is not a tool is written and
// not registered); then, with a Repo, a commit naming the tool and the
// configured author, pushed to the shared branch (direct strategy; a
// rejected push is rebased on the new upstream and retried) or to a review
// branch (pr strategy).
//
// Across nodes: after every write it pushed to the shared branch the actor
// calls Options.OnCommitted with a Committed{commit, branch, paths}, which the
// cluster publishes. A node told of a commit sends its git actor an Announce:
// the actor pulls from the upstream (Repo.Pull: the sync Hydrate runs, local
// work rebased on it) until its tree includes the commit, pulling again with a
// growing pause for at most Options.SyncTimeout, and sends Register to the
// registry actor for every file that entered the tree since the head it last
// registered (also after a write whose push was rebased on other writers'
// commits). WaitFor is the barrier before a read that must not see a stale
// tree: answered once the tree includes the commit, or failed
// (gitclient.ErrCommitNotReached) after its timeout; it fetches nothing itself.
// Requests waiting for a commit do not block the actor: it serves writes
// meanwhile.
//
// With Options.Gate (the registration gate, docs/GOVERNANCE.md), a write that
// changes an existing tool source that compiles is first checked: the recorded
// runs of the previous version are replayed against the new one, before
// anything is written. A report the policy blocks refuses the write (failure
// "gate_blocked": nothing written, registered or committed); otherwise the
// report goes with the reply (gitclient.Written.Gate). The check runs off the
// actor's goroutine and its verdict comes back as a message (gatewrite.go):
// pulls, announces and waits are served meanwhile, and the writes sent after
// the gated one wait for it, in order, each gated against the version before
// it. A file a pull changed while its write was gated is gated again. A write
// still waiting when the actor stops is answered gitclient.ErrUnavailable,
// nothing written.
//
// IMPORTANT: with a Repo, a tool source (.ts, .js) that does not compile
// (esbuild, see Compiles) is written to the working tree only: it is not
// registered, committed or pushed, and the reply's error
// (gitclient.ErrNotCompiled) says so, with the diagnostics; the write that
// makes it compile persists it. Code that does not compile never reaches the
// shared upstream.
//
// # Lifecycle
//
// Props(opts) builds the actor; the only state it keeps between messages is the
// Announce and WaitFor requests still waiting for their commit (answered with
// gitclient.ErrUnavailable when the actor stops or restarts) and the head its
// registry was last brought up to (re-read at start), so a restart loses no
// write. The Repo belongs to the caller, who closes it after the actor stops.
//
// # Failure
//
// A refused write (a path outside the tool root, a search text not found)
// replies with a Failure and leaves the file as it was. A registration the
// registry refuses (other than "not a tool") or does not answer
// (regclient.ErrUnavailable) fails the write: the file is written, not
// registered nor persisted, and the error says so. A write that
// reached the working tree but could not be persisted replies with the
// file written and a Failure saying why; when another writer changed the same
// tool first, the error wraps repo.ErrConflict and names the branch that keeps
// this version: nothing is lost silently.
package git
