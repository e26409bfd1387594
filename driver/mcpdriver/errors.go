package mcpdriver

import "errors"

// The errors of the mcp driver. A tool sees the driver's errors as
// *driver.Error with the codes below or driver's own; Go callers can match
// these sentinels with errors.Is.
var (
	// ErrConfig is an invalid server configuration (Options.Servers).
	ErrConfig = errors.New("mcp: invalid server configuration")
	// ErrUnknownServer is a server name that is not configured.
	ErrUnknownServer = errors.New("mcp: no such server")
	// ErrUnknownTool is a tool the server does not list.
	ErrUnknownTool = errors.New("mcp: no such tool")
	// ErrUnavailable is a server that cannot be reached (and, for a tool
	// list, whose cache does not exist either).
	ErrUnavailable = errors.New("mcp: server unavailable")
	// ErrClosed is a use of a closed Client.
	ErrClosed = errors.New("mcp: client closed")
)

// CodeToolError is the driver.Error code of a tool result with isError:
// the server's tool ran and failed, with the message it returned.
const CodeToolError = "mcp_tool_error"
