package cluster

import "errors"

// Errors returned by this package. Test them with errors.Is: the returned
// errors wrap them with what was wrong and what to do.
var (
	// ErrOptions is wrapped by Join's error when Options are invalid.
	ErrOptions = errors.New("cluster: invalid options")

	// ErrJoin is wrapped by Join's error when the member could not start
	// (remote bind, membership provider, etcd unreachable).
	ErrJoin = errors.New("cluster: could not join")

	// ErrLeft is returned by the calls of a Member after Leave.
	ErrLeft = errors.New("cluster: the member has left the cluster; Join again to get a new member")

	// ErrNoMember is wrapped by Request's error when no member of the
	// cluster hosts the kind (none joined with it in Options.Kinds) until
	// the context ended.
	ErrNoMember = errors.New("cluster: no member hosts the kind")

	// ErrRequest is wrapped by Request's and Publish's error when the
	// context ended before a grain answered (every attempt timed out or
	// hit a dead letter); the error names the attempts and the last cause.
	ErrRequest = errors.New("cluster: the grain did not answer")

	// ErrLeaveTimeout is wrapped by Leave's error when a step of the
	// leave did not finish before its context ended.
	ErrLeaveTimeout = errors.New("cluster: leave did not finish in time")
)
