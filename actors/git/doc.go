// Package git is the git actor: the one writer of a node's tool tree.
//
// # Protocol
//
// WriteFile and PatchFile (messages.go) are answered with *Written. The
// actor handles one message at a time, so a node's writes to its working
// tree are serialized: two agents patching the same tool never interleave.
//
// IMPORTANT: this is the thin first version. It writes the working tree
// atomically through the jail (vfs) and does not yet commit or push: Git
// persistence (hydrate, commit, push, merge, gatekeeper mode) is the next
// step of this package.
//
// # Lifecycle
//
// Props(jail) builds the actor; it holds no state between messages, so a
// restart loses nothing.
//
// # Failure
//
// A failed write replies with Written.Err (a path outside the tool root, a
// search text not found ...) and leaves the file as it was; the actor keeps
// running.
package git
