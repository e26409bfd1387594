// Package mcpserver serves a node's tools over the Model Context Protocol,
// with the official Go SDK (github.com/modelcontextprotocol/go-sdk/mcp):
// `agentos serve --mcp` (stdio) and `agentos serve --mcp-http ADDR`
// (streamable HTTP at /mcp). docs/MCP.md is the user's guide.
//
// # Tools
//
// Every MCP server a Server makes is bound to one kernel process: its tools
// run with that process's capabilities and are charged to its quota,
// exactly as an LLM's tool calls are (kerneltools.Node.Call). It offers:
//
//   - the kernel tools, with the names, descriptions and JSON Schemas of
//     kerneltools.Node.Tools (list_files, read_file, ... exec_tool);
//   - every registered tool the process may exec, under the name ToolName
//     derives from its path (tools/math/fib.ts: math_fib), its registry
//     parameters as inputSchema and its JSDoc as description; a call is
//     exec_tool of that path with the call's arguments.
//
// The registered tools are live: the Server reaches the node's registry
// actor only through its client (Options.Registry, regclient.Client): it
// lists the tools with List and watches their changes with Watch (the
// registry actor's Changed events on the node's EventStream), then adds,
// replaces or removes the MCP tools, which sends
// notifications/tools/list_changed to every connected client. A request
// that reads the tools (tools/call, tools/list, resources/list and read, a
// task's tools/call) first catches up with a change the watch has heard
// but not yet applied: a tool whose write returned is served by the next
// request, with no wait for the watch.
//
// # Resources, prompts, completions
//
// resources.go and prompts.go: the tool sources (current, and recorded
// versions), a run's trace, the registry and the personas as resources;
// the personas as prompts (their {{placeholders}} as arguments);
// completion/complete for tool paths, versions, run ids and persona names.
// Every read is a kernel call of the client's process, checked and charged
// as read_file is; what the process may not read is not listed.
//
// # Tasks
//
// tasks.go: over HTTP (and over stdio: taskconn.go), a tools/call of forge_tool, exec_tool or a
// registered tool by a client declaring io.modelcontextprotocol/tasks
// answers a task at once; tasks/get answers its result later, from
// Options.TasksDir (taskstore.go) and the journal after a restart.
//
// # Results
//
// A failed call is a CallToolResult with isError set, its text
// "<kind>: <message>" and structuredContent {"error": {"kind", "message"}}
// (ErrorKind lists the kinds); a failure is never a protocol error. A
// result that is a JSON object is also the structuredContent.
//
// # Long runs, cancellation, confirmation
//
// exec_tool, forge_tool and the registered tools report progress
// (notifications/progress every Options.ProgressInterval, and at the end)
// when the request carries a progress token; notifications/cancelled
// cancels the call's context, and its run ends "cancelled" in the journal,
// as a run of a process that ends does. A run of a tool whose check_tool
// risk is high or critical asks the client to confirm (elicitation): a
// client that did not declare the elicitation capability, or that declines,
// gets an isError result saying why (kind "confirmation"). It fails
// closed: only an answer echoing the signed RequestState of a question
// this server asked (same session, path and source hash, unexpired, once)
// with confirm == true runs the tool.
//
// # HTTP
//
// A request of MCP 2026-07-28 (Mcp-Protocol-Version), or any without a
// session that is not an initialize, is served without a session (the
// SDK's stateless handler), so any node answers it; an older client's
// initialize opens a session as before.
//
// HTTPHandler authenticates every request with a capability token
// presented as "Authorization: Bearer <token>" (capability.Token.Encode,
// minted with the node's signing key: `agentos token`): it verifies it
// with the kernel's authority and runs the session as a process whose
// token is delegated from it (one per token; every caveat carries over).
// A request without a token is answered 401, unless HTTPOptions.Anonymous
// names the process it runs as. A session belongs to the token that opened
// it (another token, or none: 403, checked by the SDK through
// auth.TokenInfo); idle sessions time out and a token's open sessions are
// capped (HTTPOptions). The
// node socket serves HTTPHandler at /mcp as the default process
// (agentos.Runtime.MCPServer).
//
// # Bridge
//
// Bridge relays another MCP server (a serving node's socket) to a client
// on another transport (stdio): `agentos serve --mcp` on a tool root a
// node already serves.
//
// # Lifecycle
//
// New starts watching the registry; Close stops it, ends the processes the
// HTTP tokens made and closes the sessions. IMPORTANT: Close MUST be called
// before the runtime closes (agentos.Runtime.Close closes the runtime's
// own MCPServer).
package mcpserver
