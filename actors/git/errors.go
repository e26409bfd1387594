package git

import "errors"

// Errors of the git actor, wrapped with the path and what to do.
var (
	// ErrSearchNotFound: PatchFile's search text does not occur in the file.
	ErrSearchNotFound = errors.New("git: search text not found")
	// ErrEmptySearch: PatchFile was given an empty search text.
	ErrEmptySearch = errors.New("git: empty search text")
)
