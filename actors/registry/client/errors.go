package client

import "errors"

// Errors of the registry (the registry object's, in package registry, and
// its actor's, which carry them across the wire as Failure codes:
// FailureCodes). They are wrapped with the path or file concerned
// and what to do; test with errors.Is.
var (
	// ErrNotTool: Register was given a path that is not a tool: outside the
	// tools directory, not a .ts or .js file, a test file (*.test.ts,
	// *.spec.ts), a declaration file (*.d.ts), or under tools/vendor/. The
	// kernel MAY ignore it for files that are not meant to be tools.
	ErrNotTool = errors.New("registry: not a tool path")
	// ErrNotRegistered: Remove was given a path the registry does not hold.
	ErrNotRegistered = errors.New("registry: tool not registered")
	// ErrPersist: the registry could not write its file (meta.json). The
	// change is kept in memory and written by the next successful write or
	// Flush.
	ErrPersist = errors.New("registry: cannot write the registry file")
	// ErrScan: Open or Rebuild could not list the tools directory.
	ErrScan = errors.New("registry: cannot list the tools")
	// ErrClosed: the registry was closed; it refuses changes.
	ErrClosed = errors.New("registry: closed")
	// ErrOptions: Open was given invalid Options (a tools directory or file
	// outside the tool root, a threshold outside 0..1, a nil jail).
	ErrOptions = errors.New("registry: invalid options")
	// ErrUnavailable: a Client request got no answer from the registry
	// actor (stopped, timed out, the ctx ended) or an unexpected one. The
	// request may or may not have been carried out.
	ErrUnavailable = errors.New("registry: the registry actor did not answer")
)
