package git

import "errors"

// Errors of the git actor, wrapped with the path and what to do.
var (
	// ErrSearchNotFound: PatchFile's search text does not occur in the file.
	ErrSearchNotFound = errors.New("git: search text not found")
	// ErrEmptySearch: PatchFile was given an empty search text.
	ErrEmptySearch = errors.New("git: empty search text")
	// ErrNotCompiled: a written tool source does not compile; it was
	// written to the working tree only, not registered, committed or
	// pushed (see Compiles).
	ErrNotCompiled = errors.New("git: the tool does not compile")
)
