package mcpserver

import "errors"

// Errors of New and of the HTTP authentication. Test with errors.Is.
var (
	// ErrOptions: a required Options field is missing.
	ErrOptions = errors.New("mcpserver: bad options")
	// ErrNoToken: an HTTP request carries no bearer token and the node
	// does not allow anonymous MCP clients (mcp.serve.allow_anonymous).
	ErrNoToken = errors.New("no capability token")
	// ErrBadToken: the bearer token is not a token of this node (forged,
	// malformed, signed with another key), or it is revoked or expired.
	ErrBadToken = errors.New("the capability token was refused")
	// ErrTooManySessions: a token already holds HTTPOptions.MaxSessions
	// open sessions.
	ErrTooManySessions = errors.New("too many MCP sessions")
	// ErrUpstreamClosed: Bridge's upstream server closed the session (the
	// serving node stopped).
	ErrUpstreamClosed = errors.New("the serving node closed the MCP session")
	// ErrClosed: the Server is closed.
	ErrClosed = errors.New("mcpserver: closed")
)
