package vfs

import (
	"errors"
	"fmt"
)

// Errors a Jail or Sandbox returns. Test with errors.Is.
var (
	// ErrSecurity: the path tries to leave the jail (absolute path, `..`
	// traversal, a symlink resolving outside the root, a hidden bookkeeping
	// directory) or to write where writing is not allowed.
	ErrSecurity = errors.New("security violation")
	// ErrNotFound: the path is inside the jail but nothing is there.
	ErrNotFound = errors.New("not found")
	// ErrInvalidPath: the path is empty or malformed.
	ErrInvalidPath = errors.New("invalid path")
)

// PathError says which path failed, why, and what the caller can do.
type PathError struct {
	Op   string // read, write, list, resolve
	Path string // the path as the caller gave it
	Err  error  // ErrSecurity, ErrNotFound, ErrInvalidPath or an I/O error
	Hint string // what to do instead; may be empty
}

func (e *PathError) Error() string {
	msg := fmt.Sprintf("%s %q: %v", e.Op, e.Path, e.Err)
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	return msg
}

func (e *PathError) Unwrap() error { return e.Err }

func securityErr(op, path, hint string) error {
	return &PathError{Op: op, Path: path, Err: ErrSecurity, Hint: hint}
}
