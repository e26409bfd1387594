package console

import "errors"

// Errors a Backend returns (wrapped) to choose the HTTP status of a page;
// any other error is a 500 showing its message.
var (
	// ErrDenied is a refusal by the token's rights (403).
	ErrDenied = errors.New("console: denied by the token's rights")
	// ErrNotFound is an unknown run, tool or version (404).
	ErrNotFound = errors.New("console: not found")
	// ErrBadInput is a request the user must correct (400).
	ErrBadInput = errors.New("console: bad input")
	// ErrNoAnswer is a member of the cluster that did not answer, or
	// refused, an ask made for the page (502: the page says which and why).
	ErrNoAnswer = errors.New("console: a member of the cluster did not answer")
	// ErrBadToken is a capability token the node does not accept (the
	// login page says why).
	ErrBadToken = errors.New("console: token refused")
	// ErrAnonymousNotLoopback is returned by New when Options.Anonymous is
	// set for an address that is not loopback.
	ErrAnonymousNotLoopback = errors.New("console: anonymous access is served only on a loopback address")
)
