// Package admin is a node's admin socket: the unix socket through which the
// agentos CLI (ps, events, kill, call, exec, runs, trace, recover) reaches the
// runtime serving a tool root, and the client of that socket.
//
// # Protocol
//
// HTTP over the unix socket Socket (relative to the tool root), JSON bodies:
//
//	GET  /v1/ps                     the process table ([]kernelclient.ProcInfo)
//	GET  /v1/events?after=N&limit=M recent kernel events ([]kernelclient.Event)
//	POST /v1/signal                 kill, term, stop or cont a process (SignalRequest)
//	POST /v1/call/TOOL              a kernel tool call as the default process
//	GET  /v1/runs, /v1/runs/{id}    the journal's runs, one run (a journal.Dump)
//	POST /v1/exec                   a tool run as 'agentos exec' does (ExecRequest → ExecReply)
//	POST /v1/recover                resume unfinished runs (RecoverRequest → the runtime's report)
//	GET  /v1/cluster                the node's cluster: every member's status (the runtime's report)
//	GET  /v1/cluster/ps, /v1/cluster/events  ps and events of every member ([]NodeReply)
//	GET  /v1/approvals?state=S      the approval requests ([]approval.Request; S pending, approved, denied or empty)
//	POST /v1/approve                approve or deny one (ApproveRequest → the decided approval.Request)
//	POST /v1/revoke                 revoke capability tokens by id, holder or token (RevokeRequest → the runtime's report)
//	GET  /metrics                   Prometheus text (when the runtime owns its metrics)
//	     /mcp                       MCP over streamable HTTP as the default process (package mcpserver)
//
// ps, events and signals are messages to the node's kernel actor (through
// kernelclient.Client, Backend.Kernel): the socket is one more sender of the
// process-table endpoint, as another node will be. Call, the journal
// endpoints, /v1/cluster and /metrics are the embedding runtime's (Backend).
//
// A request body over Backend.MaxArgs is answered 413 with an error naming
// limits.max_args_bytes, before more of it is read. Errors are answered as
// {"error": "..."} with a status saying what kind (400 a bad request, 404 no
// such run or process, 409 a conflict, 413 too large, 422 the operation
// failed); the Client returns the error's text.
//
// # Lifecycle
//
// Serve creates the socket's directory (mode 0700, owned by this user)
// before it listens, so another user can never connect, not even between
// the socket's creation and its chmod to 0600; it removes a stale socket
// left by a dead node and refuses to start over a live one. When its
// context ends it stops listening, returns, and shuts the server down in
// the background (tracked by Options.Shutdowns, which the runtime's Close
// waits for): in-flight calls end when the runtime cancels their runs.
//
// # Failure
//
// Dial fails with ErrNoNode when no node serves the root.
package admin
