// Package approval is the approval gate of forged tools (docs/GOVERNANCE.md):
// a tool whose check_tool risk is at a level the policy names does not run
// until a human (or a program on their behalf) approves that exact version
// of it.
//
// # Model
//
// An approval is about one version of one tool: its path and the content
// hash (SHA-256, transpile.Hash) of its source. A version has exactly one
// Request, kept in a bbolt file (the tool root's .agentos/approvals.db):
// pending until it is decided, then approved or denied with who decided,
// when and why. A changed tool is a new version, so it needs a new
// approval; approving a version that was denied overrides the denial (and
// the reverse), and every step is appended to the file's log, so the
// history of a version is never lost.
//
// # Durability
//
// Every request and decision is one fsynced bbolt transaction before it is
// acted on: a pending request survives a crash or restart of the node,
// `agentos approvals` lists it after the restart, and an approval given
// while the node is down (the CLI opens the file itself) lets the next run
// of that version go without asking again. A run waiting when its node
// stops ends with the node (as every in-flight call does); calling the tool
// again re-attaches to the same pending request instead of making another.
//
// # Waiting
//
// Gate.Await blocks a run until its version is decided, its context ends,
// or the policy's timeout passes (ErrTimeout, code approval_timeout; the
// request stays pending). A denied version fails with ErrDenied (code
// approval_denied) and the reason given.
//
// IMPORTANT: one process holds the file at a time (bbolt's lock): the node
// serving a tool root answers approvals through its admin socket; only
// when no node serves may another process open it.
package approval
