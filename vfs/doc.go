// Package vfs is the jailed filesystem of agentos.
//
// A Jail is rooted at a directory (the tool root) and resolves every path
// inside it: absolute paths, `..` that climbs out, NUL bytes and symbolic
// links that resolve outside the root are refused with an error wrapping
// ErrSecurity, and nothing outside the root is touched. It is built on
// os.Root, so no operation leaves the root even if a link is swapped in.
//
// IMPORTANT: every check is made on the resolved path (Jail.Resolve: every
// symbolic link followed), never on the path as written. .git and .agentos
// (at any depth) are unreachable by any path or link, the root's
// agentos.json is reachable only by its own name, and a regular file with
// more than one hard link is never read (a hard link cannot be told from its
// twin). See docs/SANDBOX.md for exactly what is followed and refused.
//
// A Sandbox is what a running tool sees through the tgp bridge:
//
//	/lib/...   the tools (the tool root's tools/ directory), read-only
//	/tmp/...   a per-run scratch directory, created on first use and
//	           wiped when the run ends (Sandbox.Close)
//	other      paths relative to the tool root: readable, writable only
//	           under the configured write directories (never agentos.json)
//
// With SandboxConfig.Rights set (the run's caller), every operation on /lib
// and the root also needs the caller's read or write right on the resolved
// path; /tmp is the run's own.
//
// The tool root's own bookkeeping (.git, .agentos) is never visible to a tool.
//
// IMPORTANT: a Jail and a Sandbox are safe for concurrent use. A Sandbox
// MUST be closed when its run ends, or its scratch directory is left behind.
package vfs
