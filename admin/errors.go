package admin

import "errors"

// ErrNoNode: no runtime is serving the tool root (start one with
// 'agentos serve').
var ErrNoNode = errors.New("agentos: no running node")

// StatusError is an error a Backend returns to choose the answer's HTTP
// status (the default is 422, "the operation failed").
type StatusError struct {
	Code int
	Err  error
}

func (e *StatusError) Error() string { return e.Err.Error() }

// Unwrap returns the error.
func (e *StatusError) Unwrap() error { return e.Err }
