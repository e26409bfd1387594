// Package vfs is the jailed filesystem of agentos.
//
// A Jail is rooted at a directory (the tool root) and resolves every path
// inside it: absolute paths, `..` that climbs out, NUL bytes and symbolic
// links that resolve outside the root are refused with an error wrapping
// ErrSecurity, and nothing outside the root is touched. It is built on
// os.Root, so the check cannot race with a symlink swapped in after it.
//
// A Sandbox is what a running tool sees through the tgp bridge:
//
//	/lib/...   the tools (the tool root's tools/ directory), read-only
//	/tmp/...   a per-run scratch directory, created on first use and
//	           wiped when the run ends (Sandbox.Close)
//	other      paths relative to the tool root: readable, writable only
//	           under the configured write directories
//
// The tool root's own bookkeeping (.git, .agentos) is never visible to a tool.
//
// IMPORTANT: a Jail and a Sandbox are safe for concurrent use. A Sandbox
// MUST be closed when its run ends, or its scratch directory is left behind.
package vfs
