package console

import (
	"context"
	"time"
)

// Backend is what the console reads and changes: one interface per page
// area, each in its own file (backend_*.go), composed here. The host's
// adapter (internal/host/console*.go) implements it over the node.
//
// IMPORTANT: every method taking a Principal MUST act with that
// principal's rights, checked exactly as the kernel tools check them; the
// console itself checks nothing but the session.
type Backend interface {
	AuthBackend
	RunsBackend
	ToolsBackend
	ApprovalsBackend
	ProcsBackend
}

// Principal is who a session acts as: the identity the Backend gave at
// Login (or Anonymous). The console keeps it server-side and hands it back
// to the Backend with every call.
type Principal struct {
	// ID identifies the token ("tok:<token id>") or "anon".
	ID string
	// Holder is the token's holder label, shown in the header.
	Holder string
	// Expires is the token's earliest expiry (zero: none): the session
	// ends then.
	Expires time.Time
	// Rights describe the token's grants for display ("exec:tools/").
	Rights []string
}

// AuthBackend verifies capability tokens.
type AuthBackend interface {
	// Login verifies the encoded capability token as the kernel verifies
	// tokens (signature, revocation, expiry) and returns who acts with it.
	// A refused token's error wraps ErrBadToken and says what to do.
	Login(ctx context.Context, token string) (Principal, error)
	// Anonymous is who a request without a session acts as when the
	// console is served anonymously (on loopback only).
	Anonymous(ctx context.Context) (Principal, error)
	// Verify reports whether who may still act (its token not revoked nor
	// expired); it is called on every request.
	Verify(ctx context.Context, who Principal) error
}
